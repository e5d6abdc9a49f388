/**
 * The trainer as a task (`deno task train …`): its flags (training_flags.ts) → a validated plan
 * (training_plan.ts) → ranks
 * running scripts/train/cli_train_rank.ts → every rank's result, with the local launcher's restarts from the
 * last checkpoint. `train-study` runs every run it makes this way.
 * @module
 */

import { joinFromEnv, launchFromEnv } from "../../deno/mod.ts";
import { launchGroup, type LaunchOptions } from "../../deno/mod.ts";
import { launchMixedGroup, printJoinLink } from "../browser/mixed_group.ts";
import { TRAIN_PROGRAM } from "../../web/tab_task.ts";
import type { RankGroup } from "../../core.ts";
import { CommError } from "../../core.ts";
import { TRANSPORTS } from "../../deno/mod.ts";
import type { RunMetadata } from "../../bench/report_format.ts";
import {
  type CheckpointMeta,
  readCheckpoint,
  removeCheckpoints,
  removeUncommitted,
} from "../../deno/mod.ts";
import { makeFolder } from "../../deno/mod.ts";
import type { Mnist } from "../../trainer/mnist.ts";
import type { TrainRankResult } from "../../trainer/training_run.ts";
import type { TrainSummary } from "../../trainer/epochs.ts";
import { run as runTrainingRank, type TrainRankArgs } from "./cli_train_rank.ts";
import {
  describeTraining,
  resumable,
  trainingNeedsDevice,
  type TrainPlan,
} from "./training_plan.ts";

export { planTraining, readData } from "./training_plan.ts";
export type { TrainPlan } from "./training_plan.ts";
export { TRAIN_FLAGS, type TrainFlags } from "./training_flags.ts";

/** The rank program of training. */
const TRAIN_RANK = new URL("./cli_train_rank.ts", import.meta.url);

/** Options of {@linkcode runTraining}. */
export interface TrainOutput {
  metadata: RunMetadata;
  /** Print epoch lines and the summary. @default {true} */
  print?: boolean;
  signal?: AbortSignal;
  /** Return every rank's final parameters (tests). */
  returnParams?: boolean;
  /** Where process ranks' output lines go (default: the terminal, prefixed with the rank). */
  onLine?: LaunchOptions["onLine"];
  /** With tabs: told the join link (`deno task browser` opens tabs on it). @default {printed} */
  onJoinLink?(link: URL): Promise<void>;
}

/**
 * Runs a plan; resolves with every rank's result (rank 0's holds the summary), or, under an
 * external launcher, with this process's alone.
 */
export async function runTraining(plan: TrainPlan, out: TrainOutput): Promise<TrainRankResult[]> {
  const checkpoint = plan.config.checkpoint;
  if (!checkpoint) return await runPlan(plan, out);
  const folder = makeFolder(checkpoint.dir);
  // No rank runs yet: what an earlier run left half-written goes (or all of it, told to).
  if (plan.config.resume || !plan.overwriteCheckpoint) removeUncommitted(checkpoint.dir);
  else removeCheckpoints(checkpoint.dir);
  try {
    return await runPlan(plan, out);
  } catch (e) {
    // A run that kept no checkpoint leaves no folder it made (a full disk, say).
    removeUncommitted(checkpoint.dir);
    folder.takeBack();
    throw e;
  }
}

/** Runs a plan on the local launcher (with its restarts) or the external one. */
async function runPlan(plan: TrainPlan, out: TrainOutput): Promise<TrainRankResult[]> {
  if (plan.launcher === "local") return await withRestarts(plan, out);
  const { config } = plan;
  const options = {
    transport: config.transport,
    bind: plan.bind,
    progress: plan.progress,
    timeoutMs: config.timeoutMs,
    gpu: trainingNeedsDevice(config),
  };
  if (plan.threads > 1) {
    // This process's ranks read the data themselves, as process ranks do.
    const args = rankArgs(plan, out);
    return await launchFromEnv<TrainRankResult>(TRAIN_RANK, {
      ...options,
      threads: plan.threads,
      args,
    })
      .results;
  }
  await using comm = await joinFromEnv(options);
  return [await runTrainingRank(comm, rankArgs(plan, out, plan.mnist))];
}

/**
 * Runs the local group; when a rank fails, starts the group again, up to `plan.maxRestarts`
 * times, from the last checkpoint (or the start, before the first), saying so on stderr, as
 * torchrun's elastic agent does. The last failure names the rank and how many restarts it took.
 */
async function withRestarts(plan: TrainPlan, out: TrainOutput): Promise<TrainRankResult[]> {
  let attempt = plan;
  for (let restarts = 0;; restarts++) {
    try {
      return await startTraining(attempt, out).results;
    } catch (e) {
      if (!(e instanceof CommError) || out.signal?.aborted || restarts >= plan.maxRestarts) {
        if (restarts > 0 && e instanceof Error) {
          e.message += ` (after ${restarts} ${restarts === 1 ? "restart" : "restarts"})`;
        }
        throw e;
      }
      const dir = plan.config.checkpoint?.dir;
      if (dir !== undefined) removeUncommitted(dir);
      const resume = dir === undefined ? undefined : resumable(dir, plan.config);
      const found = resume && readCheckpoint(dir!, plan.config, resume) as CheckpointMeta;
      console.error(
        `dccl train: ${e.message.split("\n")[0]}; restart ${restarts + 1} of ${plan.maxRestarts} ` +
          (found
            ? `from the ${resume === "previous" ? "checkpoint before the last, " : "checkpoint "}` +
              `at epoch ${found.epoch + 1}, step ${found.step}`
            : "from the start (no checkpoint yet)"),
      );
      attempt = { ...plan, config: { ...plan.config, resume } };
    }
  }
}

/** Starts a plan's ranks (tests kill them); `results` as in {@linkcode runTraining}. */
export function startTraining(plan: TrainPlan, out: TrainOutput): RankGroup<TrainRankResult> {
  const { config } = plan;
  // Worker ranks share the bytes read here; process ranks read the folder themselves.
  const processes = TRANSPORTS[config.transport].launch === "processes";
  const args = rankArgs(plan, out, processes ? undefined : plan.mnist);
  if (plan.tabs > 0) {
    // A tab reads the data from the join page's server; its rank has no files (no report).
    const { report: _, dataDir: __, ...tabArgs } = args;
    return launchMixedGroup<TrainRankResult>(TRAIN_RANK, {
      size: config.procs / plan.threads - plan.tabs,
      threads: plan.threads,
      tabs: plan.tabs,
      program: TRAIN_PROGRAM,
      tabArgs,
      host: plan.host,
      timeoutMs: config.timeoutMs,
      args,
      signal: out.signal,
      onLine: out.onLine,
      onJoinLink: out.onJoinLink ??
        ((link) => printJoinLink(link, plan.tabs, plan.host, config.timeoutMs)),
    });
  }
  return launchGroup<TrainRankResult>(TRAIN_RANK, {
    size: config.procs / plan.threads,
    threads: plan.threads,
    transport: config.transport,
    timeoutMs: config.timeoutMs,
    args,
    signal: out.signal,
    bind: plan.bind,
    progress: plan.progress,
    gpu: trainingNeedsDevice(config),
    onLine: out.onLine,
  });
}

/** What every rank of `plan` is handed (`mnist`: the data, where ranks share this process's). */
function rankArgs(plan: TrainPlan, out: TrainOutput, mnist?: Mnist): TrainRankArgs {
  return {
    config: plan.config,
    mnist,
    dataDir: plan.mnist.dir,
    report: {
      header: describeTraining(plan),
      csv: plan.csv,
      json: plan.json,
      metadata: out.metadata,
      print: out.print,
    },
    returnParams: out.returnParams,
  };
}

/** Rank 0's summary of a finished run. */
export function summaryOf(results: TrainRankResult[]): TrainSummary {
  return results[0].summary!;
}
