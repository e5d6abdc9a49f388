/**
 * Runs in a browser tab: a sweep of one primitive (its ranks workers of the tab, or logical ranks
 * on the tab's GPU) whose rows arrive as they are measured, and a training run whose epochs do.
 * The page and `deno task browser` (which drives the page over the DevTools protocol) both come
 * here; the bundle's entry modules are found beside this one.
 * @module
 */

import { launchWebGroup } from "../internal.ts";
import type { WebGroupOptions } from "../core.ts";
import type { WebTransportName } from "../core.ts";
import type { SizeResult, SweepOptions } from "../bench/harness.ts";
import type { HarnessSummary } from "../bench/sweep_rank.ts";
import type { ReportOptions, RunMetadata } from "../bench/report_format.ts";
import type { RunBounds } from "../bench/limits/machine_limits.ts";
import type { TrainConfig } from "../trainer/config.ts";
import type { EpochRow, TrainSummary } from "../trainer/epochs.ts";
import type { Mnist } from "../trainer/mnist.ts";
import type { TrainRankResult } from "../trainer/training_run.ts";
import type { SweepMessage, WebHarnessArgs } from "./tab_sweep_rank.ts";
import type { TrainMessage, WebTrainArgs } from "./tab_train_rank.ts";

/**
 * The entry modules in a bundle whose root is `root` (scripts/browser/page_server.ts builds it, each
 * entry where its source is in the repository).
 */
export function bundleEntries(root: URL) {
  return {
    workers: new URL("primitives/launch/worker_rank.js", root),
    thread: new URL("primitives/launch/thread_rank.js", root),
    harness: new URL("web/tab_sweep_rank.js", root),
    train: new URL("web/tab_train_rank.js", root),
    probe: new URL("bench/limits/probe_worker.js", root),
    /** A tab's rank of a mixed group, one of several (web/page/join.ts), and their runtime. */
    hostRank: new URL("web/tab_host_rank.js", root),
    tabRuntime: new URL("web/tab_runtime.js", root),
  };
}

/** The bundle of the page this module runs in: served under `/bundle/`. */
export function pageBundle() {
  return bundleEntries(new URL("/bundle/", location.href));
}

/** A sweep to run in the tab: what the CLI plans, and the ranks to run it on. */
export interface SweepRequest {
  sweep: SweepOptions;
  /** Ranks. */
  procs: number;
  transport: WebTransportName;
  /** Lines above the table. */
  header: string[];
  /** Whether ranks need a WebGPU device. */
  gpu: boolean;
  /** Milliseconds an operation may wait without progress. @default {30000} */
  timeoutMs?: number;
  /** Where the run came from. */
  metadata: RunMetadata;
  /** The tab's limits the rows are read against (null: none measured). */
  bounds?: RunBounds | null;
}

/** What a sweep's page learns as it runs. */
export interface SweepWatch {
  /** The run's report (its header and metadata, as rank 0 completed it). */
  onStart?(report: ReportOptions): void;
  /** One size's result. */
  onRow?(result: SizeResult): void;
}

/** A finished sweep: every size's result and the wrong elements over all of them. */
export interface SweepOutcome {
  report?: ReportOptions;
  results: SizeResult[];
  wrong: number;
}

/** A fresh name for a run's BroadcastChannel. */
function channelName(kind: string): string {
  return `dccl-${kind}-${crypto.randomUUID()}`;
}

/** What every group of the tab starts with: its entries, from the bundle. */
function groupOptions(
  size: number,
  transport: WebTransportName,
  extra: Partial<WebGroupOptions>,
): WebGroupOptions {
  return { size, transport, rankEntries: pageBundle(), ...extra };
}

/** Runs `request` in the tab; resolves once every rank has finished. */
export async function runSweep(
  request: SweepRequest,
  watch: SweepWatch = {},
): Promise<SweepOutcome> {
  const channel = new BroadcastChannel(channelName("sweep"));
  const outcome: SweepOutcome = { results: [], wrong: 0 };
  channel.onmessage = ({ data }: MessageEvent<SweepMessage>) => {
    if (data.type === "start") watch.onStart?.(outcome.report = data.report);
    else if (data.type === "row") {
      outcome.results.push(data.result);
      watch.onRow?.(data.result);
    }
  };
  const bounds = request.bounds;
  const args: WebHarnessArgs = {
    sweep: { ...request.sweep, bounds: bounds ?? undefined },
    report: {
      header: request.header,
      table: true,
      percentiles: request.sweep.timing === "per-iter",
      counts: request.sweep.counts,
      metadata: { ...request.metadata, limits: bounds },
      bounds,
    },
    channel: channel.name,
  };
  try {
    const options = { args, gpu: request.gpu, timeoutMs: request.timeoutMs };
    const results = await launchWebGroup<HarnessSummary>(
      pageBundle().harness,
      groupOptions(request.procs, request.transport, options),
    ).results;
    outcome.wrong = results[0].wrong;
    // Messages posted before the ranks returned are delivered before this turn ends.
    await new Promise((resolve) => setTimeout(resolve, 0));
    return outcome;
  } finally {
    channel.close();
  }
}

/**
 * Runs the bundled rank program at `entry` (a path in the page's bundle, `.js`) on a group of the
 * tab; resolves with what every rank returns.
 */
export function runGroup<T>(
  entry: string,
  options: Omit<WebGroupOptions, "rankEntries">,
): Promise<T[]> {
  const module = new URL(entry, new URL("/bundle/", location.href));
  return launchWebGroup<T>(module, { ...options, rankEntries: pageBundle() }).results;
}

/** A training run to make in the tab. */
export interface TrainRequest {
  config: TrainConfig<WebTransportName>;
  /** The data, read once by the page and shared by its worker ranks. */
  mnist: Mnist;
}

/** What a training page learns as it runs. */
export interface TrainWatch {
  /** Progress through an epoch, with the running loss where there is one. */
  onProgress?(epoch: number, step: number, steps: number, loss?: number): void;
  /** An epoch ended. */
  onEpoch?(row: EpochRow): void;
}

/** Trains as `request` says, on the tab's workers; resolves with rank 0's summary. */
export async function runTraining(
  request: TrainRequest,
  watch: TrainWatch = {},
): Promise<TrainSummary> {
  const channel = new BroadcastChannel(channelName("train"));
  channel.onmessage = ({ data }: MessageEvent<TrainMessage>) => {
    if (data.type === "progress") watch.onProgress?.(data.epoch, data.step, data.steps, data.loss);
    else if (data.type === "epoch") watch.onEpoch?.(data.row);
  };
  const { config, mnist } = request;
  const args: WebTrainArgs = { config, mnist, channel: channel.name };
  try {
    const options = { args, timeoutMs: config.timeoutMs, gpu: config.device === "gpu" };
    const results = await launchWebGroup<TrainRankResult>(
      pageBundle().train,
      groupOptions(config.procs, config.transport, options),
    ).results;
    return results[0].summary!;
  } finally {
    channel.close();
  }
}
