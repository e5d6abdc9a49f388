/**
 * dccl's data-parallel trainer: an MLP on WebAssembly SIMD or WebGPU kernels whose ranks
 * synchronise over dccl's collectives (gradient buckets allreduced during the backward pass,
 * local SGD, a parameter server), the run's epochs and summary, and MNIST from any source of its
 * IDX files. Runtime-neutral: `train` runs on any rank a runtime gives it data and an observer
 * for (Deno's rank program is scripts/train/cli_train_rank.ts; `deno task train` runs it).
 *
 * @example The layout of the trainer's default model
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { MlpLayout } from "./mod.ts";
 *
 * const layout = new MlpLayout([784, 256, 10]);
 * assertEquals(layout.size, 203530); // 784 × 256 + 256 + 256 × 10 + 10 parameters
 * ```
 * @module
 */

export { train } from "./training_run.ts";
export type { RunCheckpoints, RunPosition, TrainIo, TrainRankResult } from "./training_run.ts";
export { CheckpointError, CheckpointSchedule } from "./checkpoint_state.ts";
export { type HandedSet, RelayedCheckpoints } from "./relayed_checkpoints.ts";
export { DEVICES, PS_MODES, SYNC_STRATEGIES } from "./config.ts";
export type { CheckpointOptions, Device, PsMode, SyncName, TrainConfig } from "./config.ts";
export type { StepState, SyncEvery } from "./sync/strategy.ts";
export type { Engine, Score, SyncedSlab } from "./engine.ts";
export type { LayerSlots } from "./model.ts";
export { EPOCH_COLUMNS, epochLine, epochTitle, progressLine, summaryLines } from "./epochs.ts";
export type { EpochRow, Progress, TrainObserver, TrainSummary } from "./epochs.ts";
export { DataError, loadMnist, MNIST_CLASSES } from "./mnist.ts";
export type { ImageSet, Mnist, MnistSource } from "./mnist.ts";
export { ACTIVATIONS, MlpLayout } from "./model.ts";
export type { Activation } from "./model.ts";
export { GRAD_DTYPES } from "./sync/compression.ts";
export type { GradDtype } from "./sync/compression.ts";
