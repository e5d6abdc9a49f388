// dccl in headless Chromium (Debian's package chromium), driven over the DevTools protocol: every
// collective exact on the tab's workers (shm, worker) and on SwiftShader's WebGPU (gpu), the
// page's controls used as a person would (choose, run, the table fills, the CSV downloads and
// parses), a screenshot that is not blank, the page that is not cross-origin isolated saying so,
// the trainer and the results page, and `deno task browser` writing the CLI's files. Where
// chromium is missing the tests are ignored and say why; .ci/run installs it.
import { parse } from "csv-parse/sync";
import { assert_, assertEquals } from "./_assert.ts";
import { failures, matrix } from "./_matrix.ts";
import { distinctBytes } from "./_png.ts";
import type { CheckCase } from "./ranks/check_rank.ts";
import { Chromium, chromiumAvailable, type ChromiumPage } from "../scripts/browser/chromium.ts";
import { servePage } from "../scripts/browser/page_server.ts";
import { CSV_HEADER } from "../bench/report_format.ts";
import { TRANSPORT_TABLE, type TransportName } from "../deno/transport_table.ts";

const AVAILABLE = await chromiumAvailable();
const MISSING = AVAILABLE ? "" : " (ignored: Debian's package chromium is not installed)";
const FIXTURES = new URL("./fixtures/", import.meta.url);

/** The exact-check cases of `transport` at `size` ranks a tab runs: f32 and f16, both forms. */
function tabCases(transport: TransportName, size: number): CheckCase[] {
  return matrix(transport, size).filter((c) =>
    (c.dtype === "f32" || c.dtype === "f16") && c.count <= 65537
  );
}

/** Waits until `expression` is truthy in the page (every 100 ms, up to `ms`). */
async function until(page: ChromiumPage, expression: string, ms = 60_000): Promise<void> {
  const start = Date.now();
  while (!(await page.evaluate<boolean>(`Boolean(${expression})`))) {
    if (Date.now() - start > ms) throw new Error(`waited ${ms / 1000} s for ${expression}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const text = (id: string) => `document.getElementById(${JSON.stringify(id)}).textContent`;

Deno.test({
  name: `browser: the same collectives, benchmark and trainer in a Chromium tab${MISSING}`,
  ignore: !AVAILABLE,
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const server = await servePage({ extraEntries: ["tests/ranks/check_rank.ts"] });
  const chromium = await Chromium.launch();
  try {
    const page = await chromium.page(server.url);
    const env = await page.evaluate<{ crossOriginIsolated: boolean }>("dccl.ready");
    assertEquals(env.crossOriginIsolated, true, "the served page is cross-origin isolated");

    for (const transport of TRANSPORT_TABLE.launching("workers")) {
      for (const size of [2, 3]) {
        await t.step(
          `every collective is exact in the tab: ${transport}, ${size} ranks`,
          async () => {
            const cases = tabCases(transport, size);
            const wrong = await page.evaluate<number[][]>(
              `dccl.group("tests/ranks/check_rank.js", ${
                JSON.stringify({ size, transport, args: cases })
              })`,
              300_000,
            );
            assertEquals(failures(cases, wrong), [], page.console.join("\n"));
          },
        );
      }
    }

    const [device] = TRANSPORT_TABLE.launching("thread");
    await t.step(
      `every collective is exact on the tab's GPU (SwiftShader): ${device}`,
      async () => {
        const cases = matrix(device, 2).filter((c) => c.count <= 1000 && c.dtype === "f32");
        const wrong = await page.evaluate<number[][]>(
          `dccl.group("tests/ranks/check_rank.js", ${
            JSON.stringify({ size: 2, transport: device, args: cases })
          })`,
          300_000,
        );
        assertEquals(failures(cases, wrong), [], page.console.join("\n"));
      },
    );

    await t.step("the tab measures its own limits, and shows them", async () => {
      await page.evaluate(`document.getElementById("measure-limits").click()`);
      await until(page, `${text("limits-status")}.startsWith("measured")`, 120_000);
      const table = await page.evaluate<string>(text("limits-table"));
      for (const line of ["cache-line round trip", "postMessage round trip", "SIMD peak"]) {
        assert_(table.includes(line), table);
      }
      assert_(!table.includes("socket"), "a tab has no sockets");
    });

    await t.step(
      "the page says what it is, its sizes' units, and only the fields a primitive takes",
      async () => {
        const page_ = await page.evaluate<{
          intro: string;
          units: string[];
          visiblePre: number;
          rootShown: Record<string, boolean>;
          maxRanks: string[];
          note: string;
          cores: number;
        }>(`(() => {
        const form = document.getElementById("sweep-form");
        const shown = (primitive) => {
          form.elements.primitive.value = primitive;
          form.dispatchEvent(new Event("change"));
          return getComputedStyle(document.getElementById("root-field")).display !== "none";
        };
        const rootShown = { bcast: shown("bcast"), allreduce: shown("allreduce"), gather: shown("gather") };
        return {
          intro: document.querySelector("h1 + p").textContent,
          units: ["min", "max"].map((n) => form.elements[n].parentElement.textContent),
          visiblePre: [...document.querySelectorAll("pre")]
            .filter((p) => p.textContent === "" && getComputedStyle(p).display !== "none").length,
          rootShown,
          maxRanks: [...document.querySelectorAll("input[name=procs]")].map((i) => i.max),
          note: document.querySelector(".ranks-note").textContent,
          cores: navigator.hardwareConcurrency,
        };
      })()`);
        assert_(/choose a primitive and press\s+Run/.test(page_.intro), page_.intro);
        assert_(page_.units.every((u) => /elements, or bytes/.test(u)), page_.units.join(" | "));
        assertEquals(page_.visiblePre, 0, "no empty grey bars before a run");
        assertEquals(page_.rootShown, { bcast: true, allreduce: false, gather: true });
        const most = String(Math.max(2, page_.cores));
        assertEquals(page_.maxRanks, [most, most]);
        assert_(page_.note.includes(`at most ${most}`), page_.note);
      },
    );

    await t.step(
      "the page's controls: choose, run, the table fills (read against the tab's limits), the CSV downloads",
      async () => {
        const downloads = await Deno.makeTempDir();
        try {
          await page.downloadsTo(downloads);
          await page.evaluate(`(() => {
          const form = document.getElementById("sweep-form");
          const set = (name, value) => {
            form.elements[name].value = value;
            form.dispatchEvent(new Event("change"));
          };
          set("primitive", "bcast");
          set("transport", "worker");
          set("procs", "2");
          set("max", "64K");
          document.getElementById("run").click();
        })()`);
          await until(page, `${text("sweep-status")}.startsWith("done")`);
          assertEquals(
            await page.evaluate<string>(text("sweep-status")),
            "done: 17 sizes, 0 wrong elements",
          );
          const table = (await page.evaluate<string>(text("table"))).trim().split("\n");
          assertEquals(table.filter((l) => !l.startsWith("#")).length, 17);
          await page.evaluate(`document.getElementById("download-csv").click()`);
          const csv = `${downloads}/dccl.csv`;
          const start = Date.now();
          while (!(await Deno.stat(csv).then(() => true, () => false))) {
            if (Date.now() - start > 10_000) throw new Error("the CSV did not download");
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
          const rows = parse(await Deno.readTextFile(csv), { columns: true }) as Record<
            string,
            string
          >[];
          assertEquals(Object.keys(rows[0]), [...CSV_HEADER]);
          assertEquals(rows.length, 17);
          assert_(rows.every((r) => Number(r.pct_limit) > 0), "every row's share of the limit");
          assert_(table.some((l) => l.startsWith("# Peak busbw")), table.join("\n"));
          assertEquals(rows.map((r) => [r.primitive, r.transport, r.procs, r.wrong]).at(-1), [
            "bcast",
            "worker",
            "2",
            "0",
          ]);
        } finally {
          await Deno.remove(downloads, { recursive: true });
        }
      },
    );

    await t.step("a screenshot of the page is not blank", async () => {
      const distinct = await distinctBytes(await page.screenshot());
      assert_(distinct > 16, `${distinct} distinct bytes: the screenshot looks blank`);
    });

    await t.step("the results page compares dropped CSVs as compare does", async () => {
      const files = ["allreduce_shm.csv", "allreduce_worker.csv"].map((f) =>
        new URL(f, FIXTURES).pathname
      );
      await page.setFiles("#results-files", files);
      await until(page, `${text("results-table")}.includes("fastest")`);
      const table = await page.evaluate<string>(text("results-table"));
      assert_(table.includes("allreduce"), table);
    });

    await t.step("the trainer trains on the tab's workers and draws as it goes", async () => {
      const summary = await page.evaluate<{ final_test_acc: number; epochs: unknown[] }>(
        `dccl.train(${
          JSON.stringify({
            procs: 2,
            transport: "shm",
            memory: "shared",
            sync: "allreduce",
            syncEvery: 1,
            psMode: "sync",
            batch: 32,
            epochs: 1,
            lr: 0.1,
            momentum: 0,
            layers: [784, 64, 10],
            activation: "relu",
            bucketBytes: 2 ** 20,
            gradDtype: "f32",
            errorFeedback: false,
            device: "cpu",
            seed: 0,
            trainSamples: 4000,
            testSamples: 1000,
            timeoutMs: 30_000,
          })
        })`,
        300_000,
      );
      assertEquals(summary.epochs.length, 1);
      // 4000 samples, one epoch, a small model: well above chance (10%), as in Deno.
      assert_(summary.final_test_acc > 0.7, `test accuracy ${summary.final_test_acc}`);
      assert_(
        (await page.evaluate<string>(`document.getElementById("train-chart").innerHTML`))
          .includes("<svg"),
        "the trainer's chart is drawn",
      );
    });

    await t.step("a page that is not cross-origin isolated says so in one line", async () => {
      const plain = await chromium.page(new URL("/plain/", server.url));
      const env = await plain.evaluate<{ crossOriginIsolated: boolean }>("dccl.ready");
      assertEquals(env.crossOriginIsolated, false);
      const limits = await plain.evaluate<string>(text("limits"));
      assert_(limits.startsWith("This page is not cross-origin isolated"), limits);
    });
  } finally {
    await chromium.close();
    await server.close();
  }
});

Deno.test({
  name: `browser: deno task browser writes the CLI's table, CSV and JSON${MISSING}`,
  ignore: !AVAILABLE,
}, async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "scripts/browser.ts",
        "allreduce",
        "--procs",
        "2",
        "--max",
        "4K",
        "--csv",
        `${dir}/tab.csv`,
      ],
      cwd: new URL("../", import.meta.url),
    }).output();
    const out = new TextDecoder().decode(stdout);
    assertEquals(code, 0, new TextDecoder().decode(stderr));
    assert_(out.includes("in headless Chromium"), out);
    const rows = parse(await Deno.readTextFile(`${dir}/tab.csv`), { columns: true }) as Record<
      string,
      string
    >[];
    assertEquals(rows.length, 13);
    assertEquals(rows.every((r) => r.wrong === "0" && r.transport === "shm"), true);
    const json = JSON.parse(await Deno.readTextFile(`${dir}/tab.json`));
    assertEquals(json.metadata.browser.crossOriginIsolated, true);
    assertEquals(json.rows.length, 13);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    `browser: a page whose bundle cannot be loaded says so, and the server's log names the file${MISSING}`,
  ignore: !AVAILABLE,
}, async () => {
  const logged: string[] = [];
  const server = await servePage({ log: (line) => logged.push(line) });
  Deno.removeSync(`${server.bundle}/web/page/page.js`);
  const chromium = await Chromium.launch({ alsoRemove: [server.bundle] });
  try {
    const page = await chromium.page(server.url);
    await until(page, `${text("environment")}.includes("did not run")`, 20_000);
    assertEquals(
      await page.evaluate(text("environment")),
      "This page's code did not run (its bundle, /bundle/web/page/page.js, could not be " +
        "loaded): restart deno task serve, or see its log.",
    );
    assert_(logged.includes("404 /bundle/web/page/page.js: no such file is served"), logged.join());
  } finally {
    await chromium.close();
    await server.close();
  }
});
