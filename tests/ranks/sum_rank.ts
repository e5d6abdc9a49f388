// Rank program: allreduce of rank + 1, returned (1 + 2 + … + size on every rank).
import type { Communicator } from "../../mod.ts";

export async function run(comm: Communicator): Promise<number> {
  const one = Float32Array.of(comm.rank + 1);
  await comm.allreduce(one);
  return one[0];
}
