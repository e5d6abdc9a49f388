/**
 * What every synchronisation strategy gets and gives: the rank's communicator and engine, the
 * run's options, a stopwatch that splits time into computation and communication, and a progress
 * callback; each strategy trains one epoch and leaves every rank holding the same parameters.
 * @module
 */

import type { Communicator } from "../../core.ts";
import { epochShard, type Shard } from "../data.ts";
import type { Engine } from "../engine.ts";
import type { ImageSet } from "../mnist.ts";
import type { HalfPrecisionHook } from "./compression.ts";
import type { ReproducibleGradients } from "./reproducible.ts";

/** How often to synchronise: every K batches, or once at the end of each epoch. */
export type SyncEvery = number | "epoch";

/** The run's options a strategy reads. */
export interface StrategyOptions {
  /** Rows per batch on each computing rank. */
  batch: number;
  syncEvery: SyncEvery;
  /** Largest gradient bucket of `allreduce`, bytes (the first is at most 1 MiB). */
  bucketBytes: number;
  /** Parameter server: apply pushes together (`sync`) or as they arrive (`async`). */
  psMode: "sync" | "async";
  seed: number;
}

/**
 * Splits a rank's time: {@linkcode lap} charges the time since the previous lap to computation
 * or communication (copies to and from the collectives' slabs count as communication).
 */
export class Stopwatch {
  compute = 0;
  comm = 0;
  #last = performance.now();

  /** Charges the time since the last lap to `what`. */
  lap(what: "compute" | "comm"): void {
    const now = performance.now();
    this[what] += now - this.#last;
    this.#last = now;
  }

  /** Starts counting afresh. */
  reset(): void {
    this.compute = this.comm = 0;
    this.#last = performance.now();
  }
}

/** Staleness of a parameter server's pushes: updates applied between a worker's pull and push. */
export interface Staleness {
  pushes: number;
  total: number;
  max: number;
}

/**
 * How much of the gradients' allreduce the backward pass hides (OSU's overlap, `allreduce`
 * strategy): the communication of sync steps whose buckets ran behind the backward, and of one
 * sync step per epoch that reduced the same buckets after it, with nothing to hide behind.
 */
export interface Overlap {
  /** Communication ms of the sync steps that overlapped, and how many. */
  overlappedMs: number;
  overlapped: number;
  /** Communication ms of the sync steps reduced alone, and how many. */
  aloneMs: number;
  alone: number;
}

/** An epoch's {@linkcode Overlap} before its first step. */
export const NO_OVERLAP: Readonly<Overlap> = {
  overlappedMs: 0,
  overlapped: 0,
  aloneMs: 0,
  alone: 0,
};

/** Where a step left a rank's state, for a checkpoint after it. */
export interface StepState {
  /** No gradients are half accumulated: a checkpoint may be written here. */
  clean: boolean;
}

/** One rank's state during training. */
export interface StrategyContext {
  comm: Communicator;
  engine: Engine;
  train: ImageSet;
  options: StrategyOptions;
  watch: Stopwatch;
  /** Rank 0 shows `step` of `steps`; others ignore it. */
  progress(step: number, steps: number): void;
  /** The epoch's first step: a resumed run's position in it, else 0. */
  firstStep: number;
  /**
   * After `step` of `steps` steps, where it left the rank's state: a checkpoint may be written
   * there when it is `clean` (collective: every rank calls it after every step). A promise only
   * when it writes one, so the steps between checkpoints wait for nothing.
   */
  stepDone(step: number, steps: number, state: StepState): Promise<void> | undefined;
  /** This epoch's parameter-server staleness (asynchronous mode, rank 0). */
  staleness: Staleness;
  /** This epoch's hidden share of communication (the `allreduce` strategy). */
  overlap: Overlap;
  /** Allreduce calls the strategy made to synchronise, since training began (the study's Table 5.1). */
  allreduceCalls: number;
  /** `--grad-dtype f16|bf16`: gradients travel in half precision through this hook. */
  halfPrecision?: HalfPrecisionHook;
  /** `--reproducible`: the gradients are the global batch's reproducible sums, made here. */
  reproducible?: ReproducibleGradients;
}

/** A synchronisation strategy. */
export interface Strategy {
  /** Ranks that compute gradients (the others serve). */
  computing(size: number): number[];
  /** Before the first epoch: every rank ends up with rank 0's initial parameters. */
  start(ctx: StrategyContext): Promise<void>;
  /** Trains one epoch; afterwards every rank holds the parameters to evaluate. */
  epoch(ctx: StrategyContext, epoch: number): Promise<void>;
  /**
   * Whether every rank holds the same parameters after `step` of an epoch of `steps` (0: its
   * start) under `options`: the rule a resume checks the ranks' files by, which follows from the
   * strategy and the run's settings alone, never from a checkpoint's own fields.
   */
  replicatedAfter(step: number, steps: number, options: StrategyOptions): boolean;
}

/** After `step` of `steps`, the ranks have just synchronised (every K batches, and at the end). */
export function atSync(step: number, steps: number, options: StrategyOptions): boolean {
  return step % syncInterval(options.syncEvery, steps) === 0 || step === steps;
}

/** Every rank computes (allreduce, local-sgd). */
export function everyRank(size: number): number[] {
  return Array.from({ length: size }, (_, r) => r);
}

/** Epoch `epoch`'s shard of computing rank `part` of `parts` (by default: this rank of all). */
export function shardOf(
  ctx: StrategyContext,
  epoch: number,
  part = ctx.comm.rank,
  parts = ctx.comm.size,
): Shard {
  return epochShard(ctx.train.count, ctx.options.seed, epoch, part, parts, ctx.options.batch);
}

/** Loads batch `step` of `shard` into the engine. */
export function loadBatch(ctx: StrategyContext, shard: Shard, step: number): void {
  ctx.engine.load(ctx.train, shard.indices.subarray(step * shard.batch, (step + 1) * shard.batch));
}

/** Batches between synchronisations in an epoch of `steps`. */
export function syncInterval(every: SyncEvery, steps: number): number {
  return every === "epoch" ? steps : Math.min(every, steps);
}

/** Rank 0's parameters on every rank (DDP's initial broadcast). */
export async function broadcastParams(ctx: StrategyContext): Promise<void> {
  const { params } = ctx.engine;
  await params.toComm();
  await ctx.comm.bcast(params.comm, { root: 0 });
  await params.fromComm();
}

/** Every rank's parameters replaced by their average. */
export async function averageParams(ctx: StrategyContext): Promise<void> {
  const { params } = ctx.engine;
  await params.toComm();
  ctx.allreduceCalls++;
  await ctx.comm.allreduce(params.comm, { op: "avg" });
  await params.fromComm();
}
