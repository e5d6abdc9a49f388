/**
 * The rank program of a sweep in a browser tab: the sweep every benchmark runs
 * (bench/sweep_rank.ts), with rank 0 posting the run's report, each size's result and its end
 * on the run's BroadcastChannel, where the page draws them as they come.
 * @module
 */

import type { Communicator } from "../core.ts";
import { type HarnessArgs, type HarnessSummary, runSweep } from "../bench/sweep_rank.ts";
import type { SizeResult } from "../bench/harness.ts";
import type { ReportOptions, SweepSink } from "../bench/report_format.ts";

/** What the page hands every rank: the sweep, and the channel rank 0 posts on. */
export interface WebHarnessArgs extends HarnessArgs {
  /** The name of the run's BroadcastChannel. */
  channel: string;
}

/** What rank 0 posts on the run's channel. */
export type SweepMessage =
  | { type: "start"; report: ReportOptions }
  | { type: "row"; result: SizeResult }
  | { type: "finish" };

/** A sink that posts on the BroadcastChannel named `name`. */
function channelSink(name: string, report: ReportOptions): SweepSink {
  const channel = new BroadcastChannel(name);
  const post = (message: SweepMessage) => channel.postMessage(message);
  return {
    start: () => post({ type: "start", report }),
    add: (result) => post({ type: "row", result }),
    finish() {
      post({ type: "finish" });
      channel.close();
    },
  };
}

/** Runs the sweep on this rank. */
export function run(comm: Communicator, args: WebHarnessArgs): Promise<HarnessSummary> {
  return runSweep(comm, { ...args, sink: (report) => channelSink(args.channel, report) });
}
