// The collectives with per-rank counts (alltoallv, allgatherv, gatherv, scatterv,
// reduceScatterv): exact on every transport, the hierarchy and device buffers, with counts that
// include zeros, one rank with everything and primes, in place where MPI allows it, every
// algorithm (gpu_direct on device buffers of the gpu transport); a bad count named before anything
// is sent; ranks that disagree on counts fail fast, on the host and on the device.
import { assert_, assertEquals, assertFailedFast, FAIL_FAST_TIMEOUT_MS } from "./_assert.ts";
import { runRanks } from "./_spawn_ranks.ts";
import { gpuTest } from "./_gpu.ts";
import type { Pattern, VCase } from "./ranks/v_rank.ts";
import { type TransportName, TRANSPORTS } from "../deno/transport_table.ts";
import { algorithmsFor, sideOfMemory } from "../internal.ts";
import type { MemoryKind } from "../core.ts";
import { launchGroup } from "../mod.ts";
import { expectedLine } from "./_expected.ts";
import { parse } from "csv-parse/sync";
import { assertThrows } from "./_assert.ts";
import { TEST_METADATA as metadata } from "./_metadata.ts";
import { runPlan } from "../scripts/bench/benchmark.ts";
import { BENCHMARK_FLAGS, planRun } from "../scripts/bench/benchmark_plan.ts";
import { parseFlags, UsageError } from "../scripts/common/flags.ts";
import { trafficAt, zipfTraffic } from "../bench/cases/_traffic.ts";

const COLLECTIVES = ["alltoallv", "allgatherv", "gatherv", "scatterv", "reduceScatterv"] as const;
const PATTERNS: Pattern[] = ["zeros", "one", "primes", "equal"];

/** Every collective × pattern × algorithm the transport runs, and the in-place forms. */
function cases(transport: keyof typeof TRANSPORTS, size: number, memory: MemoryKind, threads = 1) {
  const facts = TRANSPORTS[transport];
  const side = sideOfMemory(facts, memory);
  const out: VCase[] = [];
  for (const collective of COLLECTIVES) {
    for (const algorithm of algorithmsFor(collective, { transport: facts, side, threads })) {
      for (const pattern of PATTERNS) {
        const root = size - 1;
        out.push({ collective, pattern, algorithm, memory, root });
        out.push({ collective, pattern, algorithm, memory, root, inPlace: true });
      }
    }
  }
  return out;
}

for (const [transport, size] of [["shm", 5], ["worker", 3], ["tcp", 3], ["ws", 2]] as const) {
  Deno.test(`v collectives: exact with zeros, one rank with everything and primes: ${transport}, ${size} ranks`, async () => {
    for (const n of [1, size]) {
      const problems = await runRanks<string[]>("v_rank.ts", {
        size: n,
        transport,
        args: cases(transport, n, TRANSPORTS[transport].bestMemory),
      });
      assertEquals(problems.flat(), []);
    }
  });
}

Deno.test("v collectives: exact on a hierarchy, 2 processes × 2 threads over tcp", async () => {
  const problems = await runRanks<string[]>("v_rank.ts", {
    size: 2,
    threads: 2,
    transport: "tcp",
    args: cases("tcp", 4, "shared", 2),
  });
  assertEquals(problems.flat(), []);
});

gpuTest("v collectives: exact in gpu memory, staged over shm", async () => {
  const problems = await runRanks<string[]>("v_rank.ts", {
    size: 3,
    transport: "shm",
    gpu: true,
    args: cases("shm", 3, "gpu"),
  });
  assertEquals(problems.flat(), []);
});

gpuTest("v collectives: exact in gpu memory on the gpu transport, every algorithm", async () => {
  for (const size of [1, 3]) {
    const problems = await runRanks<string[]>("v_rank.ts", {
      size,
      transport: "gpu",
      args: cases("gpu", size, "gpu"),
    });
    assertEquals(problems.flat(), []);
  }
});

Deno.test("v collectives: a bad count or displacement is named before anything is sent", async () => {
  const [messages] = await runRanks<string[]>("v_errors_rank.ts", { size: 1, transport: "shm" });
  const expected = [
    /alltoallv: recvCounts has 2 entries; expected 1, one per rank/,
    /alltoallv: sendCounts\[0\] = -1 is not accepted; expected an integer ≥ 0/,
    /alltoallv: sendCounts\[0\] = 1\.5 is not accepted/,
    /alltoallv: block 0 of recv \(recvCounts\[0\] = 5 from recvDispls\[0\] = 2\) ends at 7, past its 6 elements/,
    /Cannot alltoallv without sendCounts/,
    /allgatherv .* need send = recvCounts\[0\] \(3\)/,
    /reduceScatterv .* need send = the sum of recvCounts \(4\), recv = recvCounts\[0\] \(4\)/,
    /Cannot gatherv to root 0 without recv/,
    /scatterv: sendCounts must be an array of 1 integers/,
  ];
  assertEquals(messages.length, expected.length, messages.join("\n"));
  for (const [i, re] of expected.entries()) assert_(re.test(messages[i]), messages[i]);
});

/**
 * Every alltoallv, gatherv and scatterv algorithm of `transport` on `memory` fails fast when two
 * ranks disagree on a count.
 */
async function assertDisagreementFailsFast(transport: TransportName, memory: MemoryKind) {
  const facts = TRANSPORTS[transport];
  const side = sideOfMemory(facts, memory);
  for (const collective of ["alltoallv", "gatherv", "scatterv"] as const) {
    for (const algorithm of algorithmsFor(collective, { transport: facts, side })) {
      const what = `${collective} ${algorithm}`;
      const start = performance.now();
      const err = await launchGroup(new URL("./ranks/v_disagree_rank.ts", import.meta.url), {
        size: 3,
        transport,
        args: { collective, algorithm, memory },
        timeoutMs: FAIL_FAST_TIMEOUT_MS,
        onLine: expectedLine,
      }).results.then(() => undefined, (e) => e);
      assert_(err !== undefined, `${what}: the group ended well`);
      assert_(/Mismatch/.test(String(err.message)), `${what}: ${err.message}`);
      assertFailedFast(start, FAIL_FAST_TIMEOUT_MS, `${what}: ${err.message}`);
    }
  }
}

for (const transport of ["shm", "worker", "tcp"] as const) {
  Deno.test(`v collectives: ranks that disagree on a count fail fast with a MismatchError: ${transport}`, () =>
    assertDisagreementFailsFast(transport, "host"));
}

gpuTest(
  "v collectives: ranks that disagree on a count fail fast with a MismatchError: gpu memory on gpu",
  () => assertDisagreementFailsFast("gpu", "gpu"),
);

Deno.test("v collectives: alltoallv under a skew and a matrix file, exact, with the busiest rank and the balanced run beside it", async () => {
  const dir = Deno.makeTempDirSync();
  try {
    // Rank 3 sends everything it has to rank 0; the others send a little to each other.
    Deno.writeTextFileSync(
      `${dir}/m.csv`,
      "# from rank i to rank j\n0,1,1,1\n1,0,1,1\n1,1,0,1\n40,0,0,0\n",
    );
    for (const traffic of [["--skew", "zipf:1.2:3"], ["--matrix", `${dir}/m.csv`]]) {
      const plan = planRun(
        "alltoallv",
        parseFlags(BENCHMARK_FLAGS, [
          ...["--procs", "4", "--transport", "worker", "--min", "64", "--max", "256"],
          ...["--iters", "3", "--warmup", "1", "--csv", `${dir}/a.csv`, ...traffic],
        ]),
        { availableBytes: 1e10 },
      );
      assertEquals(await runPlan(plan, { table: false, metadata }), { wrong: 0, rows: 3 });
      const rows = parse(Deno.readTextFileSync(`${dir}/a.csv`), { columns: true }) as Record<
        string,
        string
      >[];
      for (const r of rows) {
        const what = `${traffic.join(" ")}: ${JSON.stringify(r)}`;
        const count = Number(r.count), busiest = Number(r.busiest_bytes) / 4;
        // The same total as the balanced run's, so a rank moves count elements on the mean.
        // (The CSV keeps 6 digits.)
        const imbalance = Number(r.imbalance);
        assert_(busiest > count && Math.abs(imbalance - busiest / count) < 1e-5 * imbalance, what);
        assert_(Number(r.balanced_us) > 0, what);
        assert_(
          Math.abs(Number(r.slowdown) - Number(r.time_us) / Number(r.balanced_us)) <
            1e-3 * Number(r.slowdown),
          what,
        );
      }
    }
    // Scaled by largest remainder, any traffic adds up to exactly the balanced run's total.
    const at = trafficAt(zipfTraffic(4, 1, 0), 4, 100);
    assertEquals(at.counts.flat().reduce((s, c) => s + c, 0), 400);
    const refused: [string[], RegExp][] = [
      [["--skew", "zipf:0"], /--skew zipf:0 is not accepted: expected zipf:S or zipf:S:SEED/],
      [
        ["--skew", "zipf:1", "--matrix", `${dir}/m.csv`],
        /--matrix and --skew are not accepted together/,
      ],
      [["--matrix", `${dir}/none.csv`], /--matrix .*none\.csv is not accepted: NotFound/],
      [["--matrix", dir], /is not accepted: not a file/],
    ];
    Deno.writeTextFileSync(`${dir}/bad.csv`, "1,2,3,4\n1,2,3,4\n1,2,x,4\n1,2,3,4\n");
    refused.push([["--matrix", `${dir}/bad.csv`], /bad\.csv: row 3, column 3 is "x"/]);
    Deno.writeTextFileSync(`${dir}/short.csv`, "1,2,3,4\n1,2,3,4\n");
    refused.push([["--matrix", `${dir}/short.csv`], /2 rows; the group has 4 ranks/]);
    for (const [argv, message] of refused) {
      assertThrows(
        () => planRun("alltoallv", parseFlags(BENCHMARK_FLAGS, ["--procs", "4", ...argv])),
        UsageError as ErrorConstructor,
        message as never,
      );
    }
    assertThrows(
      () => planRun("alltoall", parseFlags(BENCHMARK_FLAGS, ["--skew", "zipf:1"])),
      UsageError as ErrorConstructor,
      /--skew is not accepted: it applies to alltoallv, not alltoall/ as never,
    );
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("v collectives: a skewed alltoallv's sweep fits its busiest rank's buffers in 1 GiB, and a spreadsheet's matrix reads", () => {
  const dir = Deno.makeTempDirSync();
  try {
    // The busiest rank of zipf:1.2 on 2 ranks holds 1.39× the mean: at the default's 2^28 floats
    // its buffers would be 1.5 GB, past what one buffer may hold, and every rank failed.
    const zipf = ["--procs", "2", "--skew", "zipf:1.2"];
    const lowered = planRun("alltoallv", parseFlags(BENCHMARK_FLAGS, zipf), {
      availableBytes: 1e11,
    });
    const top = lowered.sweep.counts.at(-1)!;
    assert_(trafficAt(lowered.sweep.traffic, 2, top).busiest + 2 <= 2 ** 28, `${top}`);
    assert_(lowered.notes.some((n) => /lowered to \d+ elements: .* busiest rank/.test(n)));
    // So on 64 simulated ranks, whose phantom buffers are one rank's.
    const sim = planRun(
      "alltoallv",
      parseFlags(BENCHMARK_FLAGS, ["--transport", "sim", "--procs", "64", "--skew", "zipf:1.2"]),
      { availableBytes: 1e11 },
    );
    const simTop = sim.sweep.counts.at(-1)!;
    assert_(trafficAt(sim.sweep.traffic, 64, simTop).busiest + 64 <= 2 ** 28, `${simTop}`);
    assertThrows(
      () =>
        planRun("alltoallv", parseFlags(BENCHMARK_FLAGS, [...zipf, "--max", "2^28"]), {
          availableBytes: 1e11,
        }),
      UsageError as ErrorConstructor,
      /--max 2\^28 does not fit: it needs a 1\.5 GB buffer on its busiest rank/,
    );
    // Saved from a spreadsheet: a byte-order mark, CRLF lines.
    Deno.writeTextFileSync(`${dir}/sheet.csv`, "\ufeff1,2\r\n3,4\r\n");
    const sheet = planRun(
      "alltoallv",
      parseFlags(BENCHMARK_FLAGS, ["--procs", "2", "--matrix", `${dir}/sheet.csv`]),
      { availableBytes: 1e11 },
    );
    assertEquals(sheet.sweep.traffic?.weights, [[1, 2], [3, 4]]);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
