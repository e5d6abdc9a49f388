// Rank program: an allreduce where rank 1 sums plainly and the others reproducibly; every rank
// must fail with a MismatchError that says so, never wait out the timeout.
import type { Communicator } from "../../core.ts";

export async function run(comm: Communicator, count: number): Promise<void> {
  const buf = comm.alloc(count);
  await comm.allreduce(buf, { reproducible: comm.rank !== 1 });
}
