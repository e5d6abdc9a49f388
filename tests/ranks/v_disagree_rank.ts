// Rank program: an alltoallv where rank 1 expects one more element from rank 0 than rank 0 sends
// it; every rank must fail with a MismatchError, never wait out the timeout.
import type { Communicator } from "../../core.ts";

export async function run(comm: Communicator, algorithm: string): Promise<void> {
  const { rank, size } = comm;
  const sendCounts = new Array(size).fill(2);
  const recvCounts = new Array(size).fill(2);
  if (rank === 1) recvCounts[0] = 3;
  const send = new Float32Array(2 * size), recv = new Float32Array(2 * size + 1);
  await comm.alltoallv(send, recv, { sendCounts, recvCounts, algorithm });
}
