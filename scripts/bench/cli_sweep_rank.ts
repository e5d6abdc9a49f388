/**
 * The rank program of every benchmark run on Deno: the sweep (bench/sweep_rank.ts), with rank 0
 * writing the table, CSV and JSON sidecar (sweep_writer.ts).
 * @module
 */

import type { Communicator } from "../../core.ts";
import { type HarnessArgs, type HarnessSummary, runSweep } from "../../bench/sweep_rank.ts";
import { SweepWriter } from "../../deno/mod.ts";

/** Runs the sweep on this rank. */
export function run(comm: Communicator, args: HarnessArgs): Promise<HarnessSummary> {
  return runSweep(comm, { ...args, sink: (report) => new SweepWriter(report) });
}
