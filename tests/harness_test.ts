// A small real sweep per primitive and transport, end to end through the harness and reporter:
// every size a row, every row exact; and a corrupted result shows up in `wrong`.
import { parse } from "csv-parse/sync";
import { TRANSPORT_TABLE } from "../deno/transport_table.ts";
import { assert_, assertEquals } from "./_assert.ts";
import { runRanks } from "./_spawn_ranks.ts";
import { cliName, type Primitive, PRIMITIVES } from "../bench/cases.ts";
import { inMatrix } from "./_matrix.ts";
import { TEST_METADATA as metadata } from "./_metadata.ts";
import { runPlan } from "../scripts/bench/benchmark.ts";
import { BENCHMARK_FLAGS, planRun } from "../scripts/bench/benchmark_plan.ts";
import { parseFlags } from "../scripts/common/flags.ts";
import { liveWorkers } from "../primitives/launch/workers.ts";

for (const transport of TRANSPORT_TABLE.launching("workers")) {
  for (const timing of ["back-to-back", "per-iter"] as const) {
    Deno.test(`harness: every primitive over ${transport}, ${timing}, rows exact`, async () => {
      const dir = Deno.makeTempDirSync();
      // The point-to-point, overlap and per-rank-count tests run the harness in files of their own.
      for (const primitive of (Object.keys(PRIMITIVES) as Primitive[]).filter(inMatrix)) {
        const procs = primitive === "sendrecv" ? "2" : "3";
        const flags = parseFlags(BENCHMARK_FLAGS, [
          ...["--procs", procs, "--transport", transport, "--max", "5000", "--timing", timing],
          // Fixed iterations keep the suite quick; allreduce back-to-back keeps the adaptive path.
          ...(timing === "per-iter" || primitive !== "allreduce"
            ? ["--iters", "4", "--warmup", "1"]
            : []),
          ...["--csv", `${dir}/${primitive}.csv`, "--json", `${dir}/${primitive}.json`],
        ]);
        const plan = planRun(primitive, flags, { availableBytes: 1e10 });
        const summary = await runPlan(plan, { table: false, metadata });
        assertEquals(liveWorkers(), 0);
        assertEquals(summary, { wrong: 0, rows: plan.sweep.counts.length });
        const rows = parse(Deno.readTextFileSync(plan.csv!), { columns: true }) as Record<
          string,
          string
        >[];
        assertEquals(rows.map((r) => Number(r.count)), plan.sweep.counts);
        for (const r of rows) {
          assertEquals([r.primitive, r.transport, r.procs, r.wrong, r.timing], [
            cliName(primitive),
            transport,
            procs,
            "0",
            timing,
          ]);
          // The in-place columns: timed and exact where the primitive has the form, else empty.
          const inPlace = PRIMITIVES[primitive].inPlace;
          assertEquals(r.inplace_wrong, inPlace ? "0" : "", JSON.stringify(r));
          assert_(inPlace ? Number(r.inplace_time_us) > 0 : r.inplace_time_us === "");
          assert_(Number(r.time_us) > 0 && Number(r.iters) >= 1, JSON.stringify(r));
          assert_(Number(r.p50_us) <= Number(r.p99_us), JSON.stringify(r));
        }
        const json = JSON.parse(Deno.readTextFileSync(plan.json!));
        if (primitive !== "allreduce" || timing === "per-iter") {
          for (const row of json.rows) assertEquals(row.samples_us.length, 4);
        }
      }
    });
  }
}

Deno.test("harness: a wrong result is counted on every rank", async () => {
  const [wrong] = await runRanks<number[]>("corrupting_rank.ts", { size: 3, transport: "shm" });
  // One element on each of 3 ranks, out of place and in place, at each of the 3 sizes.
  assertEquals(wrong, [3, 3, 3, 3, 3, 3]);
});
