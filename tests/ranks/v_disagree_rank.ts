// Rank program: an alltoallv where rank 1 expects one more element from rank 0 than rank 0 sends
// it, by an algorithm in a memory kind; every rank must fail with a MismatchError, never wait out
// the timeout.
import type { Communicator, MemoryKind } from "../../core.ts";

export async function run(
  comm: Communicator,
  { algorithm, memory }: { algorithm: string; memory: MemoryKind },
): Promise<void> {
  const { rank, size } = comm;
  const sendCounts = new Array(size).fill(2);
  const recvCounts = new Array(size).fill(2);
  if (rank === 1) recvCounts[0] = 3;
  const send = comm.alloc(2 * size, { memory }), recv = comm.alloc(2 * size + 1, { memory });
  await comm.alltoallv(send, recv, { sendCounts, recvCounts, algorithm });
}
