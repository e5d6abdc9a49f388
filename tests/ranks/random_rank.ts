// Allreduce of random floats: returns this rank's result and its inputs' f64 sum reference.
import type { Communicator } from "../../mod.ts";

export async function run(
  comm: Communicator,
  a: { count: number; algorithm: string; seed: number },
) {
  let state = (a.seed * 2654435761 + comm.rank * 40503) >>> 0;
  const random = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 2 ** 32 - 0.5;
  const buf = comm.alloc(a.count);
  for (let i = 0; i < a.count; i++) buf.view[i] = random() * 1000;
  const input = Float64Array.from(buf.view);
  await comm.allreduce(buf, { algorithm: a.algorithm });
  return { input, output: Array.from(buf.view) };
}
