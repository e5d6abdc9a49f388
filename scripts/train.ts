/**
 * `deno task train [flags]`: trains the MNIST MLP data-parallel on dccl's primitives and prints
 * one line per epoch (see `--help`).
 * @module
 */

import { collectMetadata } from "./common/metadata.ts";
import { type Task, taskMain } from "./common/task.ts";
import { removeUncommitted } from "../deno/mod.ts";
import { planTraining, runTraining, TRAIN_FLAGS, type TrainPlan } from "./train/training.ts";

const TRAIN: Task<TrainPlan, typeof TRAIN_FLAGS> = {
  name: "train",
  summary: "Trains an MNIST MLP data-parallel over dccl's primitives.",
  flags: TRAIN_FLAGS,
  plan: (flags) => planTraining(flags),
  notes: (plan) => plan.notes,
  async run(plan, signal, argv) {
    const { mnist: _, ...options } = plan;
    const metadata = await collectMetadata(argv, { ...options.config, csv: plan.csv });
    await runTraining(plan, { metadata, signal });
    return 0;
  },
  stopped(plan, interrupted) {
    // The local group's ranks have all ended: a generation they left half-written goes.
    const dir = plan.config.checkpoint?.dir;
    if (dir && plan.launcher === "local") removeUncommitted(dir);
    return interrupted && plan.csv ? `; ${plan.csv} holds the finished epochs` : undefined;
  },
};

Deno.exit(await taskMain(TRAIN, Deno.args));
