// Rank program for the pipelined-call test: long runs of back-to-back small bcasts and reduces,
// from one root and then rotating (writers run far ahead of readers and reuse their slots),
// broken now and then by an allreduce (an arrival). Every result is checked; returns the wrong
// elements seen.
import type { Communicator } from "../../mod.ts";

export interface PipelineArgs {
  /** Elements per call: at most the pipeline slot, or past it (the eager path). */
  count: number;
  calls: number;
}

export async function run(comm: Communicator, { count, calls }: PipelineArgs): Promise<number> {
  const { rank, size } = comm;
  const buf = comm.alloc(count, { dtype: "i32" }).view as Int32Array;
  const out = comm.alloc(count, { dtype: "i32", memory: "host" }).view as Int32Array;
  let wrong = 0;
  const value = (r: number, i: number, j: number) => r * 1_000_000 + i * 16 + j;
  for (let i = 0; i < calls; i++) {
    // Thirds: bcasts from root 0, reduces to root 0 (writers may lap a reader), then mixed.
    const phase = Math.floor((3 * i) / calls);
    const root = phase < 2 ? 0 : (i * 7) % size;
    const bcast = phase === 0 || (phase === 2 && i % 2 === 0);
    for (let j = 0; j < count; j++) buf[j] = value(rank, i, j);
    // The last rank lags now and then, so a writer that ignored it would overwrite its slots.
    if (rank === size - 1 && i % 97 === 0) await new Promise((r) => setTimeout(r, 2));
    if (phase === 2 && i % 50 === 49) {
      await comm.allreduce(buf, { out });
      for (let j = 0; j < count; j++) {
        let sum = 0;
        for (let r = 0; r < size; r++) sum += value(r, i, j);
        if (out[j] !== sum) wrong++;
      }
    } else if (bcast) {
      await comm.bcast(buf, { root });
      for (let j = 0; j < count; j++) if (buf[j] !== value(root, i, j)) wrong++;
    } else {
      await comm.reduce(buf, { root, out });
      if (rank !== root) continue;
      for (let j = 0; j < count; j++) {
        let sum = 0;
        for (let r = 0; r < size; r++) sum += value(r, i, j);
        if (out[j] !== sum) wrong++;
      }
    }
  }
  return wrong;
}
