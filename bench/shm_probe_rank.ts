// Rank program of shm_probe.ts: times one collective per size, back to back after a barrier.
import type { Communicator, MemoryKind } from "../mod.ts";

export interface ProbeArgs {
  primitive: "allreduce" | "bcast";
  memory: MemoryKind;
  counts: number[];
}

export async function run(comm: Communicator, a: ProbeArgs): Promise<number[]> {
  const micros: number[] = [];
  for (const n of a.counts) {
    const buf = comm.alloc(n, { memory: a.memory });
    const iters = Math.max(5, Math.min(20_000, Math.floor(2e8 / Math.max(n, 10_000))));
    const op = () => (a.primitive === "allreduce" ? comm.allreduce(buf) : comm.bcast(buf));
    for (let i = 0; i < Math.min(iters, 2000); i++) await op(); // past the JIT tiers
    await comm.barrier();
    const start = performance.now();
    for (let i = 0; i < iters; i++) await op();
    micros.push(((performance.now() - start) * 1000) / iters);
    comm.free(buf);
  }
  return micros;
}
