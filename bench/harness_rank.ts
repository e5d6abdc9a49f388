/**
 * The rank program of every benchmark run: each rank measures the sweep; rank 0 also reports it
 * (like nccl-tests' and OSU's rank 0), so the same program serves in-process and process ranks.
 * @module
 */

import type { Communicator } from "../primitives/communicator/communicator.ts";
import { measureSweep, type SweepOptions } from "./harness.ts";
import { Reporter, type ReportOptions } from "./report.ts";

/** What the launcher hands every rank. */
export interface HarnessArgs {
  sweep: SweepOptions;
  report: ReportOptions;
}

/** Rank 0's summary of the run (other ranks return zeros). */
export interface HarnessSummary {
  /** Wrong elements over every size and rank. */
  wrong: number;
  /** Sizes measured. */
  rows: number;
}

/** Runs the sweep on this rank. */
export async function run(comm: Communicator, args: HarnessArgs): Promise<HarnessSummary> {
  if (comm.rank !== 0) {
    await measureSweep(comm, args.sweep, () => {});
    return { wrong: 0, rows: 0 };
  }
  // The device's facts (adapter, backend, limits) and Deno's completion floor go in the sidecar.
  const gpu = comm.gpu;
  const report = gpu
    ? {
      ...args.report,
      metadata: {
        ...args.report.metadata,
        gpu: { ...gpu.info, completionFloorMs: await gpu.completionFloorMs() },
      },
    }
    : args.report;
  const reporter = new Reporter(report);
  reporter.start();
  let rows = 0;
  try {
    const wrong = await measureSweep(comm, args.sweep, (result) => {
      reporter.add(result);
      rows++;
    });
    return { wrong, rows };
  } finally {
    reporter.finish();
  }
}
