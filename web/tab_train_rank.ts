/**
 * The rank program of training in a browser tab: the run of trainer/training_run.ts on the data the page
 * read and handed over, rank 0 posting its progress and every epoch on the run's
 * BroadcastChannel, where the page draws them. A tab of a mixed group hands its checkpoints to
 * rank 0 (trainer/relayed_checkpoints.ts); the page's own runs keep none.
 * @module
 */

import type { Communicator } from "../core.ts";
import type { TrainConfig } from "../trainer/config.ts";
import type { EpochRow, TrainObserver } from "../trainer/epochs.ts";
import type { Mnist } from "../trainer/mnist.ts";
import { train, type TrainRankResult } from "../trainer/training_run.ts";
import { RelayedCheckpoints } from "../trainer/relayed_checkpoints.ts";

/** What the page hands every rank. */
export interface WebTrainArgs {
  config: TrainConfig;
  mnist: Mnist;
  /** The name of the run's BroadcastChannel. */
  channel: string;
  /** Every rank posts there, not only rank 0 (a tab's one rank of a mixed group). */
  everyRank?: boolean;
}

/** What rank 0 posts on the run's channel. */
export type TrainMessage =
  | { type: "progress"; epoch: number; step: number; steps: number; loss?: number }
  | { type: "epoch"; row: EpochRow };

/** Progress through an epoch is posted at most this often, ms. */
const PROGRESS_EVERY_MS = 100;

/** An observer that posts on the BroadcastChannel named `name`. */
function channelObserver(name: string): TrainObserver {
  const channel = new BroadcastChannel(name);
  const post = (message: TrainMessage) => channel.postMessage(message);
  let posted = -Infinity;
  return {
    start() {},
    progress(epoch, step, steps, loss) {
      const now = performance.now();
      if (now - posted < PROGRESS_EVERY_MS && step < steps) return;
      posted = now;
      post({ type: "progress", epoch, step, steps, loss: loss?.() });
    },
    note() {},
    add: (row) => post({ type: "epoch", row }),
    finish: () => channel.close(),
  };
}

/** Trains on this rank. */
export function run(comm: Communicator, args: WebTrainArgs): Promise<TrainRankResult> {
  const observer = comm.rank === 0 || args.everyRank ? channelObserver(args.channel) : undefined;
  const { config } = args, checkpoint = config.checkpoint;
  return train(comm, {
    config,
    data: args.mnist,
    observer,
    checkpoints: checkpoint &&
      ((engine, extra) => new RelayedCheckpoints(comm, engine, checkpoint, extra)),
  });
}
