// OSU's non-blocking tests (iallreduce, ibcast, ialltoall): exact over shared memory and sockets,
// the call timed alone, with computation between issue and await, and the computation alone, and
// the overlap read from them as OSU reads it.
import { parse } from "csv-parse/sync";
import { assert_, assertEquals } from "./_assert.ts";
import { TEST_METADATA as metadata } from "./_metadata.ts";
import { cliName, type Primitive } from "../bench/cases.ts";
import { overlapColumns } from "../bench/harness.ts";
import { runPlan } from "../scripts/bench/benchmark.ts";
import { BENCHMARK_FLAGS, planRun } from "../scripts/bench/benchmark_plan.ts";
import { parseFlags } from "../scripts/common/flags.ts";
import { readResultsFile } from "../deno/files/result_files.ts";

Deno.test("non-blocking: overlap is the share of the call that hid behind the computation", () => {
  // Nothing hid: overall = compute + pure. All of it: overall = compute.
  assertEquals(overlapColumns(10, 20, 10).overlap_pct, 0);
  assertEquals(overlapColumns(10, 10, 10).overlap_pct, 100);
  assertEquals(overlapColumns(10, 12.5, 10).overlap_pct, 75);
  // Noise never reads below 0 or above 100.
  assertEquals(overlapColumns(10, 25, 10).overlap_pct, 0);
  assertEquals(overlapColumns(10, 9, 10).overlap_pct, 100);
});

for (const transport of ["shm", "tcp"]) {
  Deno.test(`non-blocking: iallreduce, ibcast and ialltoall exact over ${transport}, with OSU's columns`, async () => {
    const dir = Deno.makeTempDirSync();
    try {
      for (const primitive of ["iallreduce", "ibcast", "ialltoall"] as Primitive[]) {
        const plan = planRun(
          primitive,
          parseFlags(BENCHMARK_FLAGS, [
            ...["--transport", transport, "--procs", "3", "--max", "4K", "--step-factor", "16"],
            ...["--iters", "5", "--warmup", "1", "--csv", `${dir}/${primitive}.csv`],
          ]),
          { availableBytes: 1e10 },
        );
        assertEquals(await runPlan(plan, { table: false, metadata }), {
          wrong: 0,
          rows: plan.sweep.counts.length,
        });
        const rows = parse(Deno.readTextFileSync(plan.csv!), { columns: true }) as Record<
          string,
          string
        >[];
        for (const r of rows) {
          const what = JSON.stringify(r);
          assertEquals([r.primitive, r.wrong, r.inplace_time_us], [cliName(primitive), "0", ""]);
          const [pure, overall, compute] = [r.time_us, r.overall_us, r.compute_us].map(Number);
          // The computation lasts the slowest rank's pure call, at least the mean's, alone and
          // inside the overall op alike.
          assert_(pure > 0 && compute >= 0.999 * pure && overall >= 0.999 * pure, what);
          const { overlap_pct } = overlapColumns(pure, overall, compute);
          assert_(Math.abs(Number(r.overlap_pct) - overlap_pct) < 0.1, what); // the CSV keeps 6 digits
        }
      }
    } finally {
      Deno.removeSync(dir, { recursive: true });
    }
  });
}

Deno.test("non-blocking: --format osu prints OSU's four columns, which compare reads as the same test", async () => {
  const dir = Deno.makeTempDirSync();
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        ...["run", "-A", new URL("../scripts/iallreduce.ts", import.meta.url).pathname],
        ...["--format", "osu", "--max", "64", "--iters", "3", "--warmup", "1"],
      ],
      stdin: "null",
    }).output();
    const text = new TextDecoder().decode(out.stdout);
    assert_(out.success, new TextDecoder().decode(out.stderr));
    const lines = text.trim().split("\n");
    assertEquals(lines[0], "# OSU MPI Non-blocking Allreduce Latency Test (dccl)");
    assert_(
      /^# Size\s+Overall\(us\)\s+Compute\(us\)\s+Pure Comm\.\(us\)\s+Overlap\(%\)$/.test(lines[2]),
    );
    Deno.writeTextFileSync(`${dir}/osu.txt`, text);
    const points = await Array.fromAsync(readResultsFile(`${dir}/osu.txt`));
    const rows = lines.filter((l) => /^\d/.test(l)).map((l) => l.split(/\s+/).map(Number));
    assertEquals(
      points.map((p) => [p.primitive, p.floats * 4]),
      rows.map((r) => ["iallreduce", r[0]]),
    );
    // The time compared is the pure communication's, as dccl's own rows.
    assertEquals(points.map((p) => p.time_us), rows.map((r) => r[3]));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
