// Rank program of shm_probe.ts: times one collective per size, back to back after a barrier.
import type { Communicator, MemoryKind } from "../../../mod.ts";

export interface ProbeArgs {
  primitive: "allreduce" | "bcast";
  memory: MemoryKind;
  counts: number[];
}

/** Timed batches per size: the best one shows the steady state between preemptions. */
const BATCHES = 10;

/** Per size: [mean µs per op over every batch, µs per op of the fastest batch]. */
export async function run(comm: Communicator, a: ProbeArgs): Promise<[number, number][]> {
  const results: [number, number][] = [];
  for (const n of a.counts) {
    const buf = comm.alloc(n, { memory: a.memory });
    const iters = Math.max(BATCHES, Math.min(20_000, Math.floor(2e8 / Math.max(n, 10_000))));
    const batch = Math.ceil(iters / BATCHES);
    const op = () => (a.primitive === "allreduce" ? comm.allreduce(buf) : comm.bcast(buf));
    // Ten times the timed iterations take the code through the JIT's tiers.
    for (let i = 0; i < 10 * iters; i++) await op();
    await comm.barrier();
    results.push(await timeBatches(BATCHES, batch, op));
    comm.free(buf);
  }
  return results;
}

/** `batches` timed batches of `calls` awaited calls: [mean µs per call, the fastest batch's]. */
export async function timeBatches(
  batches: number,
  calls: number,
  call: () => Promise<unknown>,
): Promise<[number, number]> {
  let total = 0, best = Infinity;
  for (let b = 0; b < batches; b++) {
    const start = performance.now();
    for (let i = 0; i < calls; i++) await call();
    const ms = performance.now() - start;
    total += ms;
    best = Math.min(best, ms);
  }
  return [(total * 1000) / (calls * batches), (best * 1000) / calls];
}
