// Rank program for the simulated transport's timing tests: one call after a barrier, timed on
// this rank's virtual clock (µs), and whether its result is exact where payloads are real.
import type { Communicator } from "../../core.ts";

export interface TimingArgs {
  collective: "allreduce" | "bcast" | "reduce";
  algorithm: string;
  count: number;
}

export async function run(comm: Communicator, a: TimingArgs): Promise<{ us: number; ok: boolean }> {
  const buf = comm.alloc(a.count);
  const view = buf.view as Float32Array;
  if (comm.simulatedPayload !== "phantom") view.fill(comm.rank + 1);
  await comm.barrier();
  const start = comm.now();
  if (a.collective === "allreduce") await comm.allreduce(buf, { algorithm: a.algorithm });
  else if (a.collective === "bcast") await comm.bcast(buf, { root: 0, algorithm: a.algorithm });
  else await comm.reduce(buf, { root: 0, algorithm: a.algorithm });
  const us = (comm.now() - start) * 1e3;
  const n = comm.size;
  const expected = a.collective === "bcast" ? 1 : n * (n + 1) / 2;
  const checked = a.collective !== "reduce" || comm.rank === 0;
  const ok = comm.simulatedPayload === "phantom" || !checked || view.every((v) => v === expected);
  comm.free(buf);
  return { us, ok };
}
