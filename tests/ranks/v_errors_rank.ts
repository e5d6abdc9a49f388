// Rank program: the argument checks of the collectives with per-rank counts, one bad call each;
// returns each refusal's message (a call that was accepted is a test failure).
import type { Communicator } from "../../core.ts";

export async function run(comm: Communicator): Promise<string[]> {
  const a = new Float32Array(6), b = new Float32Array(6), c = new Float32Array(3);
  const calls: (() => Promise<void>)[] = [
    () => comm.alltoallv(a, b, { sendCounts: [1], recvCounts: [1, 1] }),
    () => comm.alltoallv(a, b, { sendCounts: [-1], recvCounts: [1] }),
    () => comm.alltoallv(a, b, { sendCounts: [1.5], recvCounts: [1] }),
    () => comm.alltoallv(a, b, { sendCounts: [1], recvCounts: Int32Array.of(5), recvDispls: [2] }),
    () => comm.alltoallv(a, b, { recvCounts: [1] }),
    () => comm.allgatherv(a, b, { recvCounts: [3] }),
    () => comm.reduceScatterv(c, new Float32Array(4), { recvCounts: [4] }),
    () => comm.gatherv(a, undefined, { recvCounts: [6] }),
    () => comm.scatterv(a, b, { sendCounts: 7 as unknown as number[] }),
  ];
  const messages: string[] = [];
  for (const call of calls) {
    try {
      await call();
      messages.push("accepted");
    } catch (e) {
      messages.push(`${(e as Error).name}: ${(e as Error).message}`);
    }
  }
  return messages;
}
