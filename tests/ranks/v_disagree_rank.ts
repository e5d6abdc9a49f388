// Rank program: a v collective where two ranks disagree on one count, by an algorithm in a memory
// kind: in an alltoallv rank 1 expects one more element from rank 0 than rank 0 sends it; in a
// gatherv the root expects one more from rank 1 than it sends; in a scatterv rank 1 takes one more
// than the root sends it. Every rank must fail with a MismatchError, never wait out the timeout.
import type { Communicator, MemoryKind } from "../../core.ts";

export async function run(
  comm: Communicator,
  { collective, algorithm, memory }: {
    collective: "alltoallv" | "gatherv" | "scatterv";
    algorithm: string;
    memory: MemoryKind;
  },
): Promise<void> {
  const { rank, size } = comm;
  const counts = new Array(size).fill(2);
  const whole = comm.alloc(2 * size + 1, { memory });
  const block = comm.alloc(rank === 1 && collective === "scatterv" ? 3 : 2, { memory });
  if (collective === "gatherv") {
    if (rank === 0) counts[1] = 3;
    await comm.gatherv(block, rank === 0 ? whole : undefined, { recvCounts: counts, algorithm });
  } else if (collective === "scatterv") {
    await comm.scatterv(rank === 0 ? whole : undefined, block, { sendCounts: counts, algorithm });
  } else {
    const recvCounts = counts.slice();
    if (rank === 1) recvCounts[0] = 3;
    const send = comm.alloc(2 * size, { memory });
    await comm.alltoallv(send, whole, { sendCounts: counts, recvCounts, algorithm });
  }
}
