/**
 * Time per op and Gb/s of allreduce and bcast over `shm` next to the raw ceilings measured in the
 * same run: a single-thread Float32Array.set copy and a WASM SIMD sum of the same size, and for
 * 1 float the handoff of one float between two workers without the library.
 *
 *     deno run -A scripts/limits/probes/shm_probe.ts [--procs 2] [--memory shared]
 * @module
 */

import { parseArgs } from "node:util";
import { reduce } from "../../../kernels/mod.ts";
import { createHeapMemory, RankHeap } from "../../../internal.ts";
import { spawnRanks } from "../../../mod.ts";
import type { MemoryKind } from "../../../mod.ts";
import type { ProbeArgs } from "./shm_probe_rank.ts";
import type { HandoffArgs } from "./handoff_worker.ts";

const { values } = parseArgs({
  options: {
    procs: { type: "string", default: "2" },
    memory: { type: "string", default: "shared" },
  },
});
const counts = [1, 2 ** 16, 2 ** 22, 2 ** 26];
const gbps = (n: number, us: number) => (n * 32) / us / 1e3;

function ceiling(n: number, body: () => void): number {
  const iters = Math.max(5, Math.min(20_000, Math.floor(2e8 / Math.max(n, 10_000))));
  for (let i = 0; i < 3; i++) body();
  const start = performance.now();
  for (let i = 0; i < iters; i++) body();
  return ((performance.now() - start) * 1000) / iters;
}

const heap = new RankHeap(createHeapMemory());
const copy: number[] = [], sum: number[] = [];
for (const n of counts) {
  const a = heap.alloc("f32", n), b = heap.alloc("f32", n);
  copy.push(ceiling(n, () => a.set(b)));
  sum.push(ceiling(n, () => reduce("sum", a, a, b)));
  heap.free(a);
  heap.free(b);
}

/**
 * The 1-float ceiling, µs per call (mean, best batch): two workers hand a float through a ring of
 * cache lines, with an `await` per call (handoff_worker.ts).
 */
async function handoff(): Promise<[number, number]> {
  const slots = 64;
  const buffer = new SharedArrayBuffer((slots + 1) * 64);
  const sides = [true, false].map((writer) => {
    const worker = new Worker(new URL("./handoff_worker.ts", import.meta.url), { type: "module" });
    const args: HandoffArgs = { buffer, slots, writer, calls: 20_000, batches: 10 };
    const done = new Promise<[number, number]>((resolve, reject) => {
      worker.onmessage = (e) => resolve(e.data);
      worker.onerror = (e) => reject(new Error(e.message));
    });
    worker.postMessage(args);
    return done.finally(() => worker.terminate());
  });
  const [w, r] = await Promise.all(sides);
  return [(w[0] + r[0]) / 2, (w[1] + r[1]) / 2];
}
const [handoffMean, handoffBest] = await handoff();

const rows: string[] = [];
for (const primitive of ["allreduce", "bcast"] as const) {
  const args: ProbeArgs = { primitive, memory: values.memory as MemoryKind, counts };
  const perRank = await spawnRanks<[number, number][]>(
    new URL("./shm_probe_rank.ts", import.meta.url),
    { size: Number(values.procs), args },
  );
  counts.forEach((n, i) => {
    const mean = perRank.reduce((s, r) => s + r[i][0], 0) / perRank.length;
    const best = perRank.reduce((s, r) => s + r[i][1], 0) / perRank.length;
    rows.push(
      [primitive, n, mean.toFixed(2), best.toFixed(2), gbps(n, mean).toFixed(1)]
        .concat([gbps(n, best), gbps(n, copy[i]), gbps(n, sum[i])].map((g) => g.toFixed(1)))
        .join("\t"),
    );
  });
}
console.log(`# shm, ${values.procs} ranks, ${values.memory} memory; Gb/s = floats·32 / time`);
console.log(
  "# mean: every timed op; best: the fastest of 10 batches (steady state between preemptions)",
);
console.log(
  "primitive\tfloats\tmean_us\tbest_us\tmean_Gb/s\tbest_Gb/s\tcopy_Gb/s\twasm_sum_Gb/s",
);
console.log(rows.join("\n"));
console.log(
  `# 1-float ceiling, without the library: ${handoffMean.toFixed(2)} µs mean, ` +
    `${handoffBest.toFixed(2)} µs best (two workers, a ring of cache lines, an await per call)`,
);
