// OSU's point-to-point tests (latency, bw, bibw, mbw_mr): exact on every transport and memory
// kind, rows per message with every stream's bandwidth, OSU's flags and layout, and a wrong
// message counted; shm's direct messages (large ones copied once, from the sender's heap) exact.
import { parse } from "csv-parse/sync";
import { assert_, assertEquals, assertThrows } from "./_assert.ts";
import { runRanks } from "./_spawn_ranks.ts";
import { gpuTest } from "./_gpu.ts";
import { cliName, type Primitive, PRIMITIVES } from "../bench/cases.ts";
import { TEST_METADATA as metadata } from "./_metadata.ts";
import { runPlan } from "../scripts/bench/benchmark.ts";
import { BENCHMARK_FLAGS, planRun } from "../scripts/bench/benchmark_plan.ts";
import { parseFlags, UsageError } from "../scripts/common/flags.ts";
import { readResultsFile } from "../deno/files/result_files.ts";

const TESTS: Primitive[] = ["latency", "bw", "bibw", "mbwMr"];

const plan = (primitive: Primitive, argv: string[]) =>
  planRun(primitive, parseFlags(BENCHMARK_FLAGS, argv), { availableBytes: 1e10 });

/** Runs every test on `argv`'s ranks; returns each one's CSV rows. */
async function measureAll(argv: string[]): Promise<Record<string, string>[][]> {
  const dir = Deno.makeTempDirSync();
  try {
    const all = [];
    for (const primitive of TESTS) {
      const p = plan(primitive, [
        ...argv,
        ...["--max", "300", "--iters", "3", "--warmup", "1"],
        ...(PRIMITIVES[primitive].windowed ? ["--window", "5"] : []),
        ...["--csv", `${dir}/${primitive}.csv`],
      ]);
      const summary = await runPlan(p, { table: false, metadata });
      assertEquals(summary, { wrong: 0, rows: p.sweep.counts.length });
      all.push(parse(Deno.readTextFileSync(p.csv!), { columns: true }) as Record<string, string>[]);
    }
    return all;
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
}

for (const transport of ["tcp", "ws", "worker"]) {
  Deno.test(`point-to-point: every test exact over ${transport}, 2 pairs, rows per message`, async () => {
    const all = await measureAll(["--transport", transport, "--pairs", "2"]);
    for (const [k, rows] of all.entries()) {
      const primitive = TESTS[k];
      // Streams at once: a stream per pair, both ways of each for bibw.
      const streams = primitive === "bibw" ? 4 : 2;
      for (const r of rows) {
        assertEquals([r.primitive, r.procs, r.wrong], [cliName(primitive), "4", "0"]);
        const time = Number(r.time_us), bytes = Number(r.bytes);
        assert_(time > 0, JSON.stringify(r));
        // algbw is every stream's bytes per message time; the message rate, streams per it.
        const near = (a: number, b: number) => Math.abs(a - b) <= 1e-3 * Math.abs(b) + 1e-9;
        assert_(near(Number(r.algbw_gbs), (bytes * streams) / time / 1e3), JSON.stringify(r));
        assert_(near(Number(r.msg_rate), (streams / time) * 1e6), JSON.stringify(r));
      }
    }
  });
}

for (const memory of ["host", "shared", "managed"]) {
  Deno.test(`point-to-point: every test exact in ${memory} memory over shm`, async () => {
    const all = await measureAll(["--memory", memory]);
    for (const rows of all) for (const r of rows) assertEquals([r.wrong, r.memory], ["0", memory]);
  });
}

gpuTest(
  "point-to-point: every test exact in gpu memory, staged over shm and on the gpu transport",
  async () => {
    for (const argv of [["--memory", "gpu"], ["--transport", "gpu"]]) {
      for (const rows of await measureAll(argv)) for (const r of rows) assertEquals(r.wrong, "0");
    }
  },
);

Deno.test("point-to-point: shm's direct messages are exact both ways, to a late receiver, and in order", async () => {
  const problems = await runRanks<string[]>("direct_rank.ts", { size: 2, transport: "shm" });
  assertEquals(problems, [[], []]);
});

Deno.test("point-to-point: a corrupted message is counted wrong in every test", async () => {
  const [wrong] = await runRanks<Record<string, number[]>>("corrupted_messages_rank.ts", {
    size: 2,
    transport: "shm",
  });
  // One element per message received, at each of the 2 sizes: a ping-pong's two messages, a
  // window's 3 to the receiver (bibw: 3 each way).
  assertEquals(wrong, { latency: [2, 2], bw: [3, 3], bibw: [6, 6], mbwMr: [3, 3] });
});

Deno.test("point-to-point: --pairs and --window as OSU's, refused where they mean nothing", () => {
  assertEquals(plan("mbwMr", ["--pairs", "3"]).procs, 6);
  assertEquals(plan("latency", ["--procs", "4"]).procs, 4); // osu_multi_lat's pairs
  assertEquals(plan("bw", ["--pairs", "2", "--procs", "4"]).procs, 4);
  assertEquals(plan("bw", ["-W", "16"]).sweep.window, 16);
  assertEquals(plan("bibw", []).sweep.window, 64);
  assertEquals(plan("latency", []).sweep.window, undefined);
  // OSU's largest message unless --max says: 4 MiB.
  assertEquals(plan("bw", []).sweep.counts.at(-1), 2 ** 20);
  assertEquals(plan("latency", ["--dtype", "f64"]).sweep.counts.at(-1), 2 ** 19);
  const refused: [Primitive, string[], RegExp][] = [
    ["latency", ["--procs", "3"], /--procs 3 is not accepted: latency runs on pairs of ranks/],
    ["bw", ["--pairs", "2", "--procs", "2"], /--pairs 2 .* needs 4 ranks/],
    ["allreduce", ["--pairs", "2"], /--pairs 2 .* applies to latency, bw, bibw, mbw_mr/],
    ["latency", ["--window", "8"], /--window 8 .* applies to bw, bibw, mbw_mr, not latency/],
    ["bw", ["--window", "0"], /--window 0 .* from 1 to 4096/],
    ["sendrecv", ["--procs", "4"], /sendrecv runs on 2 ranks/],
    // The default --max is said as OSU's 4 MiB, not as the elements it holds.
    ["latency", ["--min", "1GB"], /--max 4MB is below --min 1GB/],
  ];
  for (const [primitive, argv, message] of refused) {
    assertThrows(() => plan(primitive, argv), UsageError as ErrorConstructor, message as never);
  }
});

Deno.test("point-to-point: --format osu prints OSU's layout, which compare reads back as the same test", async () => {
  const dir = Deno.makeTempDirSync();
  try {
    for (
      const [task, title, header] of [
        ["latency", "# OSU MPI Latency Test (dccl)", /^# Size\s+Avg Latency\(us\)$/],
        ["bw", "# OSU MPI Bandwidth Test (dccl)", /^# Size\s+Bandwidth \(MB\/s\)$/],
        [
          "bibw",
          "# OSU MPI Bi-Directional Bandwidth Test (dccl)",
          /^# Size\s+Bandwidth \(MB\/s\)$/,
        ],
        [
          "mbw_mr",
          "# OSU MPI Multiple Bandwidth / Message Rate Test (dccl)",
          /MB\/s\s+Messages\/s$/,
        ],
      ] as const
    ) {
      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          ...["run", "-A", new URL(`../scripts/${task}.ts`, import.meta.url).pathname],
          ...["--format", "osu", "--max", "64", "--iters", "3", "--warmup", "1"],
          ...["--csv", `${dir}/${task}.csv`],
        ],
        stdin: "null",
      }).output();
      const text = new TextDecoder().decode(out.stdout);
      assert_(out.success, new TextDecoder().decode(out.stderr));
      const lines = text.trim().split("\n");
      assertEquals(lines[0], title);
      assert_(lines.some((l) => header.test(l)), text);
      const rows = lines.filter((l) => /^\d/.test(l));
      assertEquals(rows.map((l) => Number(l.split(/\s+/)[0])), [4, 8, 16, 32, 64, 128, 256]);
      Deno.writeTextFileSync(`${dir}/${task}.txt`, text);
      // compare reads the OSU text as the test it is, with the CSV's own numbers.
      const osu = await Array.fromAsync(readResultsFile(`${dir}/${task}.txt`));
      const csv = await Array.fromAsync(readResultsFile(`${dir}/${task}.csv`));
      assertEquals(osu.map((p) => p.primitive), csv.map((p) => p.primitive));
      // OSU prints two decimals: of µs for latency, of MB/s for bandwidth.
      const figure = (p: { time_us: number; gbps: number }) =>
        task === "latency" ? p.time_us : (p.gbps * 1e3) / 8;
      for (const [i, p] of osu.entries()) {
        const [read, written] = [figure(p), figure(csv[i])];
        assert_(Math.abs(read - written) <= 0.005 + 1e-6 * written, `${task}: ${read} ${written}`);
      }
    }
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
