// Rank program for the publication test: many back-to-back 1-element bcasts, reduces and
// allreduces, each with values no earlier call had, so a reader that saw a call's publication
// before its data would read a stale value. Now and then rank 0 pauses long enough for the others
// to fall asleep (the heavy fence's path). Returns the wrong elements seen.
import type { Communicator } from "../../mod.ts";

export interface PublishArgs {
  calls: number;
  /** Rank 0 pauses 5 ms every this many calls. */
  pauseEvery: number;
}

export async function run(comm: Communicator, { calls, pauseEvery }: PublishArgs): Promise<number> {
  const { rank, size } = comm;
  const buf = comm.alloc(1, { dtype: "i32" }).view as Int32Array;
  const sum = (i: number) => size * i + (size * (size - 1)) / 2; // Σ over ranks of i + rank
  let wrong = 0;
  for (let i = 1; i <= calls; i++) {
    if (rank === 0 && i % pauseEvery === 0) await new Promise((r) => setTimeout(r, 5));
    buf[0] = rank === 0 ? i : -1;
    await comm.bcast(buf);
    if (buf[0] !== i) wrong++;
    buf[0] = i + rank;
    await comm.reduce(buf);
    if (rank === 0 && buf[0] !== sum(i)) wrong++;
    buf[0] = i + rank;
    await comm.allreduce(buf);
    if (buf[0] !== sum(i)) wrong++;
  }
  return wrong;
}
