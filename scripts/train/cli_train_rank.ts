/**
 * The rank program of `deno task train`: the run of trainer/training_run.ts with Deno's data, output and
 * checkpoints — MNIST handed over by the launcher (worker ranks share its bytes) or read from the
 * folder (process ranks), rank 0 printing and writing the epochs (train_writer.ts), checkpoints
 * in a folder (checkpoint.ts).
 * @module
 */

import type { Communicator } from "../../core.ts";
import type { TrainConfig } from "../../trainer/config.ts";
import type { Mnist } from "../../trainer/mnist.ts";
import { train, type TrainRankResult } from "../../trainer/training_run.ts";
import { Checkpointer } from "../../deno/mod.ts";
import { loadMnistFolder } from "../../deno/mod.ts";
import { TrainReporter, type TrainReportOptions } from "../../deno/mod.ts";

/** What the launcher hands every rank. */
export interface TrainRankArgs {
  config: TrainConfig;
  /** The data, shared between worker ranks; process ranks read `dataDir` themselves. */
  mnist?: Mnist;
  dataDir: string;
  report: Omit<TrainReportOptions, "epochs">;
  /** Return the parameters in the summary (tests compare them). @default {false} */
  returnParams?: boolean;
}

/** Trains on this rank. */
export async function run(comm: Communicator, args: TrainRankArgs): Promise<TrainRankResult> {
  const { config } = args;
  const checkpoint = config.checkpoint;
  return train(comm, {
    config,
    data: args.mnist ?? await loadMnistFolder(args.dataDir),
    observer: comm.rank === 0
      ? new TrainReporter({ ...args.report, epochs: config.epochs })
      : undefined,
    checkpoints: checkpoint &&
      ((engine, extra) => new Checkpointer(comm, engine, checkpoint, config, extra)),
    returnParams: args.returnParams,
  });
}
