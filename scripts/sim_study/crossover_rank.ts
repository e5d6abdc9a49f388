/**
 * The rank program of `deno task sim-study crossovers`: on a simulated group, each collective at
 * each size with each algorithm and with `auto`, one call after a barrier, timed on this rank's
 * virtual clock; returns this rank's µs per cell and the algorithm `auto` ran.
 * @module
 */

import type { Communicator } from "../../core.ts";

/** What the study asks of one group. */
export interface CrossoverArgs {
  /** Each collective with the algorithms compared. */
  collectives: { name: "allreduce" | "bcast" | "reduce"; algorithms: string[] }[];
  /** Element counts (f32). */
  counts: number[];
}

/** One rank's cells: µs by collective, size and algorithm (`auto` last), and auto's picks. */
export interface CrossoverTimes {
  us: number[][][];
  picked: string[][];
}

export async function run(comm: Communicator, a: CrossoverArgs): Promise<CrossoverTimes> {
  const buf = comm.alloc(Math.max(...a.counts));
  const us: number[][][] = [], picked: string[][] = [];
  for (const { name, algorithms } of a.collectives) {
    const bySize: number[][] = [], picks: string[] = [];
    for (const count of a.counts) {
      const view = buf.view.subarray(0, count);
      const cells: number[] = [];
      for (const algorithm of [...algorithms, "auto"]) {
        await comm.barrier();
        const start = comm.now();
        if (name === "allreduce") await comm.allreduce(view, { algorithm });
        else if (name === "bcast") await comm.bcast(view, { root: 0, algorithm });
        else await comm.reduce(view, { root: 0, algorithm });
        cells.push((comm.now() - start) * 1e3);
      }
      picks.push(comm.lastAlgorithm(name)!);
      bySize.push(cells);
    }
    us.push(bySize);
    picked.push(picks);
  }
  comm.free(buf);
  return { us, picked };
}
