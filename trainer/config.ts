/**
 * A training run's settings, as the CLI validates them and every rank receives them.
 * @module
 */

import type { MemoryKind } from "../core.ts";
import type { Activation } from "./model.ts";
import type { SyncEvery } from "./sync/strategy.ts";
import type { GradDtype } from "./sync/compression.ts";

/** Synchronisation strategies. */
export const SYNC_STRATEGIES = ["allreduce", "local-sgd", "ps"] as const;
/** A synchronisation strategy's name. */
export type SyncName = typeof SYNC_STRATEGIES[number];
/** Parameter-server modes. */
export const PS_MODES = ["sync", "async"] as const;
/** A parameter-server mode. */
export type PsMode = typeof PS_MODES[number];
/** Where the model computes. */
export const DEVICES = ["cpu", "gpu"] as const;
/** Where the model computes. */
export type Device = typeof DEVICES[number];

/**
 * Where a run keeps its checkpoint and how often it writes one: every `every` batches (at the
 * first step after them where the strategy's state is whole) and after every epoch, or after
 * every epoch only.
 */
export interface CheckpointOptions {
  /** The folder the checkpoints live in. */
  dir: string;
  /** Batches between checkpoints, or only after every epoch. */
  every: number | "epoch";
}

/** Everything a rank needs to know about the run (`T`: the names of its runtime's transports). */
export interface TrainConfig<T extends string = string> {
  /** Ranks in all. */
  procs: number;
  /** The transport's name. */
  transport: T;
  /** Memory kind of the slabs collectives use. */
  memory: MemoryKind;
  /** The synchronisation strategy. */
  sync: SyncName;
  /** Batches between synchronisations, or once per epoch. */
  syncEvery: SyncEvery;
  /** Parameter server: synchronous or asynchronous pushes. */
  psMode: PsMode;
  /** Rows per batch on each computing rank. */
  batch: number;
  /** Epochs to train. */
  epochs: number;
  /** Learning rate. */
  lr: number;
  /** SGD momentum (0: none). */
  momentum: number;
  /** Widths, inputs first. */
  layers: number[];
  /** Hidden layers' activation. */
  activation: Activation;
  /** Bytes per gradient bucket allreduced during the backward pass. */
  bucketBytes: number;
  /** The element type gradients travel in (allreduce; compression.ts). */
  gradDtype: GradDtype;
  /** With a half-precision `gradDtype`: carry each rank's rounding error into its next step. */
  errorFeedback: boolean;
  /**
   * Gradients whose bits depend only on the global batch, not on the ranks sharing it, the
   * transport or the algorithm (allreduce every batch, on the CPU: sync/reproducible.ts).
   */
  reproducible: boolean;
  /** Where the model computes. */
  device: Device;
  /** Seed of the parameters and the data order. */
  seed: number;
  /** Train on the first N training images only (quick runs). */
  trainSamples?: number;
  /** Evaluate on the first N test images only. */
  testSamples?: number;
  /** Milliseconds an operation may wait without progress. */
  timeoutMs: number;
  /** Where to keep checkpoints, and how often to write them. */
  checkpoint?: CheckpointOptions;
  /**
   * Go on from the checkpoint in `checkpoint.dir` instead of starting afresh: its latest set, or
   * the one before it (when the latest does not verify).
   */
  resume?: "latest" | "previous";
}
