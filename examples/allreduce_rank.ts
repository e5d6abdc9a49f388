/**
 * A rank program, as every rank runs it (SPMD): allreduce rank + 1 over a shared buffer and
 * return the sum, 1 + 2 + … + size on every rank. The examples of mod.ts and core.ts start it.
 * @module
 */

import type { Communicator } from "../core.ts";

/** Allreduces rank + 1 and returns the sum. */
export async function run(comm: Communicator): Promise<number> {
  const buf = comm.alloc(1 << 20, { memory: "shared" });
  buf.view.fill(comm.rank + 1);
  await comm.allreduce(buf, { op: "sum" });
  return buf.view[0];
}
