/**
 * A training run's settings, as the CLI validates them and every rank receives them.
 * @module
 */

import type { MemoryKind } from "../web.ts";
import type { Activation } from "./model.ts";
import type { SyncEvery } from "./sync/strategy.ts";
import type { GradDtype } from "./sync/compression.ts";

/** Synchronisation strategies. */
export const SYNC_STRATEGIES = ["allreduce", "local-sgd", "ps"] as const;
/** A synchronisation strategy's name. */
export type SyncName = typeof SYNC_STRATEGIES[number];
/** Parameter-server modes. */
export const PS_MODES = ["sync", "async"] as const;
/** Where the model computes. */
export const DEVICES = ["cpu", "gpu"] as const;

/**
 * Where a run keeps its checkpoint and how often it writes one: every `every` batches (at the
 * first step after them where the strategy's state is whole) and after every epoch, or after
 * every epoch only.
 */
export interface CheckpointOptions {
  dir: string;
  every: number | "epoch";
}

/** Everything a rank needs to know about the run (`T`: the names of its runtime's transports). */
export interface TrainConfig<T extends string = string> {
  procs: number;
  transport: T;
  /** Memory kind of the slabs collectives use. */
  memory: MemoryKind;
  sync: SyncName;
  syncEvery: SyncEvery;
  psMode: typeof PS_MODES[number];
  /** Rows per batch on each computing rank. */
  batch: number;
  epochs: number;
  lr: number;
  momentum: number;
  /** Widths, inputs first. */
  layers: number[];
  activation: Activation;
  bucketBytes: number;
  /** The element type gradients travel in (allreduce; compression.ts). */
  gradDtype: GradDtype;
  /** With a half-precision `gradDtype`: carry each rank's rounding error into its next step. */
  errorFeedback: boolean;
  device: typeof DEVICES[number];
  seed: number;
  /** Train on the first N training images only (quick runs). */
  trainSamples?: number;
  /** Evaluate on the first N test images only. */
  testSamples?: number;
  /** Milliseconds an operation may wait without progress. */
  timeoutMs: number;
  /** Where to keep checkpoints, and how often to write them. */
  checkpoint?: CheckpointOptions;
  /** Go on from the checkpoint in `checkpoint.dir` instead of starting afresh. */
  resume?: boolean;
}
