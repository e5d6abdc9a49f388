// Browser tabs and Deno processes in one group (`--tabs`, scripts/browser/mixed_group.ts), with
// headless Chromium's tabs opening the join link as a person's would: every collective exact on
// 2 processes and 2 tabs, and on a tab that brings its own workers as one host of shared memory
// (`--threads`), a tab closed mid-run named on the other ranks, a tab that never joins
// named when the join timeout ends, the hub refusing a wrong token, Host or Origin, and a short
// training run across a tab and a process that prints what two processes print. Where chromium
// is missing the tests are ignored and say why; .ci/run installs it.
import { assert_, assertEquals, assertRejects } from "./_assert.ts";
import { matrix } from "./_matrix.ts";
import type { CheckCase } from "./ranks/check_rank.ts";
import { Chromium, chromiumAvailable, type ChromiumPage } from "../scripts/browser/chromium.ts";
import { launchMixedGroup, type MixedGroupOptions } from "../scripts/browser/mixed_group.ts";
import { serveHub } from "../deno/transports/websocket_hub.ts";
import { RankFailedError } from "../primitives/errors.ts";
import type { JoinState } from "../web/tab_task.ts";
import { rawUpgrade } from "./_raw_ws.ts";
import { offeredProtocol, reserveTabHost } from "../primitives/transports/websocket_join.ts";

const AVAILABLE = await chromiumAvailable();
const MISSING = AVAILABLE ? "" : " (ignored: Debian's package chromium is not installed)";
const RANKS = new URL("./ranks/", import.meta.url);

/** A mixed group whose join link `tabs` tabs of one Chromium open; the tabs' pages with it. */
async function withTabs<T>(
  module: string,
  options: Omit<MixedGroupOptions, "onJoinLink"> & { open?: number },
  body: (results: Promise<T[]>, pages: Promise<ChromiumPage[]>) => Promise<void>,
): Promise<void> {
  const chromium = await Chromium.launch();
  const pages = Promise.withResolvers<ChromiumPage[]>();
  try {
    const group = launchMixedGroup<T>(new URL(module, RANKS), {
      ...options,
      async onJoinLink(link) {
        const opened: ChromiumPage[] = [];
        for (let i = 0; i < (options.open ?? options.tabs); i++) {
          opened.push(await chromium.page(link));
        }
        pages.resolve(opened);
      },
    });
    group.results.catch(() => {});
    await body(group.results, pages.promise);
  } finally {
    await chromium.close();
  }
}

/** What a tab's page says of its rank once it has ended. */
function ended(page: ChromiumPage): Promise<JoinState> {
  return page.evaluate<JoinState>("dcclJoin.ended.then(() => dcclJoin)", 120_000);
}

/** Rejects with the verdict, or fails the test when the group succeeded. */
async function verdict(results: Promise<unknown>): Promise<RankFailedError> {
  try {
    await results;
  } catch (e) {
    assert_(e instanceof RankFailedError, `a RankFailedError, not ${e}`);
    return e;
  }
  throw new Error("the group succeeded");
}

Deno.test({
  name: `tab group: 2 Deno processes and 2 tabs, every collective exact${MISSING}`,
  ignore: !AVAILABLE,
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const cases: CheckCase[] = matrix("websocket", 4).filter((c) =>
    (c.dtype === "f32" || c.dtype === "f16" || c.dtype === "i32") && c.count <= 65537
  );
  assert_(cases.length > 50, `${cases.length} cases`);
  await withTabs<number[]>("check_rank.ts", {
    size: 2,
    tabs: 2,
    program: "tests/ranks/check_rank.ts",
    args: cases,
    timeoutMs: 60_000,
  }, async (results, pages) => {
    const processes = await results;
    const tabs = await Promise.all((await pages).map(ended));
    for (const [r, tab] of tabs.entries()) {
      assertEquals(tab.status, "done", `tab ${r}: ${tab.error}`);
      processes[2 + r] = tab.result as number[];
    }
    const wrong = cases.flatMap((c, i) =>
      processes.some((p) => p[i] !== 0)
        ? [`${c.primitive} ${c.algorithm} ${c.dtype} ${c.count}: ${processes.map((p) => p[i])}`]
        : []
    );
    assertEquals(wrong, [], "every case exact on every rank");
    assertEquals(tabs.map((t) => t.rank).sort(), [2, 3], "the tabs are ranks 2 and 3");
  });
});

Deno.test({
  name: `tab group: a tab brings its own workers (--threads 2), one host of shared memory, ` +
    `every collective exact${MISSING}`,
  ignore: !AVAILABLE,
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const cases: CheckCase[] = matrix("websocket", 4, "shared", 2).filter((c) =>
    c.dtype === "f32" && c.count <= 1001 && c.primitive !== "sendrecv"
  );
  assert_(cases.some((c) => c.algorithm === "hierarchical"), "hierarchical algorithms run");
  await withTabs<number[]>("check_rank.ts", {
    size: 1,
    threads: 2,
    tabs: 1,
    program: "tests/ranks/check_rank.ts",
    args: cases,
    timeoutMs: 60_000,
  }, async (results, pages) => {
    const processes = await results;
    const [tab] = await Promise.all((await pages).map(ended));
    assertEquals(tab.status, "done", tab.error);
    assertEquals(tab.ranks, [2, 3], "the tab is the second host: ranks 2 and 3");
    processes.splice(2, 2, ...tab.results as number[][]);
    const wrong = cases.flatMap((c, i) =>
      processes.some((p) => p[i] !== 0)
        ? [`${c.primitive} ${c.algorithm} ${c.count}: ${processes.map((p) => p[i])}`]
        : []
    );
    assertEquals(wrong, [], "every case exact on every rank");
  });
});

Deno.test({
  name: `tab group: a tab closed mid-run is named on every other rank${MISSING}`,
  ignore: !AVAILABLE,
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  await withTabs("loop_rank.ts", {
    size: 1,
    tabs: 2,
    program: "tests/ranks/loop_rank.ts",
    timeoutMs: 20_000,
    onLine() {},
  }, async (results, pages) => {
    const [first] = await pages;
    // The group runs once every tab says its rank runs.
    for (const page of await pages) {
      await page.evaluate(
        "new Promise((r) => { const t = setInterval(() => " +
          "dcclJoin.status === 'running' && (clearInterval(t), r(true)), 50); })",
      );
    }
    const rank = await first.evaluate<number>("dcclJoin.rank");
    const closed = performance.now();
    await first.close();
    const e = await verdict(results);
    assertEquals(e.failedRank, rank, e.message);
    assert_(/tab/.test(e.message), e.message);
    assert_(performance.now() - closed < 20_000, "named within the group's timeout");
  });
});

Deno.test({
  name: `tab group: a tab that never joins is named when the join timeout ends${MISSING}`,
  ignore: !AVAILABLE,
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  await withTabs("loop_rank.ts", {
    size: 1,
    tabs: 2,
    open: 1,
    program: "tests/ranks/loop_rank.ts",
    joinMs: 4_000,
    timeoutMs: 20_000,
    onLine() {},
  }, async (results, pages) => {
    const [page] = await pages;
    const e = await verdict(results);
    assertEquals(e.failedRank, 2, e.message);
    assert_(/tab rank 2 never joined within 4 s/.test(e.message), e.message);
    const tab = await ended(page);
    assertEquals(tab.status, "failed");
    assert_(/rank 2 never joined/.test(tab.error ?? ""), tab.error);
  });
});

Deno.test("tab group: the hub refuses a wrong token, Host, Origin or rank", async () => {
  const token = "a".repeat(48);
  const origins = ["http://127.0.0.1:1"];
  const hub = serveHub({ size: 2, processes: 1, token, joinMs: 10_000, origins });
  try {
    const hex = (t: string) =>
      Array.from(new TextEncoder().encode(t), (b) => b.toString(16).padStart(2, "0")).join("");
    const upgrade = async (headers: Record<string, string>) => {
      const { status, conn } = await rawUpgrade(hub.port, {
        "Sec-WebSocket-Protocol": `dccl.${hex(token)}`,
        ...headers,
      }, "/join");
      conn.close();
      return status;
    };
    // What passes every check is let in (so each refusal below is that check's); it stays.
    const joined = await rawUpgrade(hub.port, {
      "Sec-WebSocket-Protocol": `dccl.${hex(token)}.0`,
    }, "/join");
    assertEquals(joined.status, 101);
    assertEquals(await upgrade({ "Sec-WebSocket-Protocol": `dccl.${hex("b".repeat(48))}` }), 401);
    assertEquals(await upgrade({ "Sec-WebSocket-Protocol": "dccl" }), 401);
    assertEquals(await upgrade({ Origin: "http://evil.example" }), 403);
    assertEquals(await upgrade({ Host: `evil.example:${hub.port}` }), 403);
    assertEquals(await upgrade({ "Sec-WebSocket-Protocol": `dccl.${hex(token)}.01` }), 400);
    // Rank 1 is a tab's place, and rank 0 has joined: no process may claim either.
    assertEquals(await upgrade({ "Sec-WebSocket-Protocol": `dccl.${hex(token)}.1` }), 409);
    assertEquals(await upgrade({ "Sec-WebSocket-Protocol": `dccl.${hex(token)}.0` }), 409);
    joined.conn.close();
  } finally {
    await hub.close();
  }
});

Deno.test("tab group: a page reserves its host's ranks, which only its workers may claim", async () => {
  const token = "a".repeat(48);
  // 1 process and 2 tabs of 2 ranks each: ranks 0-1 processes, 2-3 and 4-5 tabs.
  const hub = serveHub({ size: 6, processes: 2, threads: 2, token, joinMs: 10_000 });
  try {
    const claim = async (rank: number) => {
      const { status, conn } = await rawUpgrade(hub.port, {
        "Sec-WebSocket-Protocol": offeredProtocol(token, rank),
      }, "/join");
      conn.close();
      return status;
    };
    const hubUrl = hub.url;
    assertEquals(await claim(2), 409, "no page has reserved rank 2");
    const first = await reserveTabHost({ hub: hubUrl, token, timeoutMs: 10_000 });
    assertEquals(first.reserved.ranks, [2, 3]);
    assertEquals([first.reserved.size, first.reserved.threads], [6, 2]);
    const second = await reserveTabHost({ hub: hubUrl, token, timeoutMs: 10_000 });
    assertEquals(second.reserved.ranks, [4, 5]);
    await assertRejects(
      () => reserveTabHost({ hub: hubUrl, token, timeoutMs: 10_000 }),
      { message: /refused the connection/ }, // a 409: every tab's place is taken
    );
    assertEquals(await claim(3), 101, "a reserved rank is claimed");
    // A page that leaves frees its host for the next page.
    const closed = new Promise((r) => first.page.onclose = r);
    first.page.close();
    await closed;
    const again = await reserveTabHost({ hub: hubUrl, token, timeoutMs: 10_000 });
    assertEquals(again.reserved.ranks, [2, 3]);
    second.page.close();
    again.page.close();
  } finally {
    await hub.close();
  }
});

/** Runs `deno run -A scripts/<script> <args>`; exit code and stderr. */
async function task(script: string, args: string[]): Promise<{ code: number; stderr: string }> {
  const { code, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--v8-flags=--experimental-wasm-fp16", `scripts/${script}`, ...args],
    cwd: new URL("../", import.meta.url),
    stdout: "null",
    stderr: "piped",
  }).output();
  return { code, stderr: new TextDecoder().decode(stderr) };
}

Deno.test({
  name: `tab group: the trainer across a tab and a process prints what two processes print, ` +
    `and a benchmark records its links${MISSING}`,
  ignore: !AVAILABLE,
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const dir = await Deno.makeTempDir({ prefix: "dccl-tab-group-" });
  try {
    const common = ["--epochs", "2", "--train-samples", "3000", "--test-samples", "1000"];
    const mixed = await task("browser.ts", [
      "train",
      ...["--procs", "1", "--tabs", "1", ...common, "--csv", `${dir}/mixed.csv`],
    ]);
    assertEquals(mixed.code, 0, mixed.stderr);
    const two = await task("train.ts", [
      ...["--procs", "2", "--transport", "tcp", ...common, "--csv", `${dir}/two.csv`],
    ]);
    assertEquals(two.code, 0, two.stderr);
    // Every column but the timings, as printed (the CSV keeps the digits the table shows and more).
    const curve = async (name: string) =>
      (await Deno.readTextFile(`${dir}/${name}`)).trim().split("\n").map((line) => {
        const cells = line.split(",");
        return [cells[0], ...cells.slice(5, 9)].map((c) => c.slice(0, 8)).join(",");
      });
    assertEquals(await curve("mixed.csv"), await curve("two.csv"), "the same loss and accuracy");

    const bench = await task("browser.ts", [
      "allreduce",
      ...["--procs", "1", "--tabs", "2", "--max", "4096", "--json", `${dir}/run.json`],
    ]);
    assertEquals(bench.code, 0, bench.stderr);
    const { metadata } = JSON.parse(await Deno.readTextFile(`${dir}/run.json`));
    assertEquals(metadata.members, ["process", "tab", "tab"]);
    assertEquals(metadata.linkKinds, { "tab-process": 2, "tab-tab relayed": 1 });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
