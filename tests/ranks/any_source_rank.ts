// Rank program for receives from any rank. Ranks send to rank 0 in turn, last rank first: each
// sends ROUNDS messages, waiting for rank 0's acknowledgement of each, then passes a token to
// the rank below. A rank 0 that received in rank order would wait on rank 1 forever; with
// recv("any") it returns [sender, first element, last element] per message, in sending order.
import type { Communicator, MemoryKind } from "../../mod.ts";

export const ROUNDS = 3;
const DATA = 7, ACK = 8, TOKEN = 9;

export async function run(
  comm: Communicator,
  args: { count: number; memory: MemoryKind },
): Promise<number[][]> {
  const buf = comm.alloc(args.count, { memory: args.memory });
  const host = new Float32Array(args.count);
  const note = comm.alloc(1, { memory: "host" });
  if (comm.rank !== 0) {
    if (comm.rank < comm.size - 1) await comm.recv(note, comm.rank + 1, { tag: TOKEN });
    for (let round = 0; round < ROUNDS; round++) {
      host.fill(comm.rank * 100 + round);
      await buf.write(host);
      await comm.send(buf, 0, { tag: DATA });
      await comm.recv(note, 0, { tag: ACK });
    }
    if (comm.rank > 1) await comm.send(note, comm.rank - 1, { tag: TOKEN });
    return [];
  }
  const got: number[][] = [];
  for (let i = 0; i < (comm.size - 1) * ROUNDS; i++) {
    const sender = await comm.recv(buf, "any", { tag: DATA });
    await buf.read(host);
    got.push([sender, host[0], host[args.count - 1]]);
    await comm.send(note, sender, { tag: ACK });
  }
  return got;
}
