// Rank program for the buffer-reuse test: rank 0 overwrites its send buffer as soon as each send
// resolves; rank 1 returns what it received, which must be the contents at the time of each send.
import type { Communicator } from "../../mod.ts";

/** Messages sent, and the floats in each (small: cloned; large: transferred on `worker`). */
export const ROUNDS = 3;

export async function run(comm: Communicator, count: number): Promise<number[][]> {
  const buf = comm.alloc(count, { memory: "host" }).view;
  const got: number[][] = [];
  for (let round = 0; round < ROUNDS; round++) {
    if (comm.rank === 0) {
      buf.fill(round + 1);
      await comm.send(buf, 1);
      buf.fill(-1);
    } else {
      await comm.recv(buf, 0);
      got.push([buf[0], buf[count - 1]]);
    }
  }
  return got;
}
