/**
 * What every benchmark's ranks run: each rank measures the sweep; rank 0 also reports it (like
 * nccl-tests' and OSU's rank 0) to the sink its runtime gives it — Deno's writes the table and
 * files (scripts/bench/cli_sweep_rank.ts), a browser tab's draws them.
 * @module
 */

import type { Communicator } from "../core.ts";
import { type LinkCosts, linkCounts } from "../internal.ts";
import { halfKernels } from "../kernels/mod.ts";
import { measureSweep, type SweepOptions } from "./harness.ts";
import type { HalfKernels, ReportOptions, SweepSink } from "./report_format.ts";

/** What the launcher hands every rank. */
export interface HarnessArgs {
  /** What every rank measures. */
  sweep: SweepOptions;
  /** What rank 0 reports with it. */
  report: ReportOptions;
}

/** Rank 0's summary of the run (other ranks return zeros). */
export interface HarnessSummary {
  /** Wrong elements over every size and rank. */
  wrong: number;
  /** Sizes measured. */
  rows: number;
}

/** The header line of measured link costs. */
function describeLinks(links: LinkCosts): string {
  const gbps = (8e-3 / links.usPerByte).toFixed(2),
    reduce = (1e-3 / links.reduceUsPerByte).toFixed(1);
  return `links between hosts (measured as the group formed; auto prices algorithms by them): ` +
    `latency ${links.latencyUs.toFixed(1)} us, ${gbps} Gb/s, reduction ${reduce} GB/s`;
}

/** Which half kernels each rank runs, as each says of its own (collective). */
async function halfKernelsOf(comm: Communicator): Promise<HalfKernels[]> {
  const kinds: HalfKernels[] = ["software", "hardware"];
  const mine = Int32Array.of(kinds.indexOf(halfKernels()));
  const all = new Int32Array(comm.size);
  await comm.gather(mine, comm.rank === 0 ? all : undefined, { root: 0 }); // rank 0 reads it
  return Array.from(all, (k) => kinds[k]);
}

/**
 * Runs the sweep on this rank; rank 0 reports it to the sink `args.sink` makes from the report's
 * options (with the run's measured facts in its metadata).
 */
export async function runSweep(
  comm: Communicator,
  args: HarnessArgs & { sink: (report: ReportOptions) => SweepSink },
): Promise<HarnessSummary> {
  const kernels = await halfKernelsOf(comm);
  if (comm.rank !== 0) {
    await measureSweep(comm, args.sweep);
    return { wrong: 0, rows: 0 };
  }
  // The device's facts (adapter, backend, limits) and Deno's completion floor go in the sidecar,
  // and so do the link costs `auto` picked by, with a line above the table, and the half
  // kernels every rank ran.
  const gpu = comm.gpu, links = comm.links;
  const report = {
    ...args.report,
    // A simulated group's links are its model's, described above the table already.
    header: links && !comm.simulatedPayload
      ? [...args.report.header, describeLinks(links)]
      : args.report.header,
    metadata: {
      ...args.report.metadata,
      ...(gpu && { gpu: { ...gpu.info, completionFloorMs: await gpu.completionFloorMs() } }),
      ...(links && { links }),
      ...(comm.members && {
        members: comm.members,
        linkKinds: linkCounts({ members: comm.members, threads: comm.threads }),
      }),
      halfKernels: kernels.every((k) => k === kernels[0]) ? kernels[0] : kernels,
    },
  };
  const reporter = args.sink(report);
  reporter.start();
  let rows = 0;
  try {
    const wrong = await measureSweep(comm, {
      ...args.sweep,
      onResult: (result) => {
        reporter.add(result);
        rows++;
      },
    });
    return { wrong, rows };
  } finally {
    reporter.finish();
  }
}
