/**
 * The plan of a training run (`deno task train …`): flags → a validated {@linkcode TrainPlan},
 * the data read and checked up front. `train-study` plans every run it makes this way.
 * @module
 */

import { type TransportName, TRANSPORTS } from "../../deno/mod.ts";
import { MAX_REPRODUCIBLE_ROWS } from "../../trainer/sync/reproducible.ts";
import { type CheckpointOptions, type TrainConfig } from "../../trainer/config.ts";
import { META_FILES, readCheckpoint } from "../../deno/mod.ts";
import { DataError, type Mnist, MNIST_CLASSES } from "../../trainer/mnist.ts";
import { loadMnistFolder, packagedMnistDir } from "../../deno/mod.ts";
import { STRATEGIES } from "../../trainer/training_run.ts";
import { needsDevice } from "../../internal.ts";
import { integer, oneOf, outputFiles, UsageError, writableFolder } from "../common/flags.ts";
import { groupSize, type Launch, planLaunch } from "../common/launcher.ts";
import { requireDevice } from "../common/task.ts";
import type { GradDtype } from "../../trainer/sync/compression.ts";
import type { TrainFlags } from "./training_flags.ts";

/** A validated training run. */
export interface TrainPlan {
  config: TrainConfig<TransportName>;
  mnist: Mnist;
  /** `env`: this process is one rank of an external launcher's group. */
  launcher: Launch["launcher"];
  /** Ranks per process (`config.procs` counts them all). */
  threads: number;
  bind: string;
  /** Browser tabs joining the processes (a mixed group), and where it listens. */
  tabs: number;
  host: string;
  /** Where a process rank's calls progress (`--progress`). */
  progress: Launch["progress"];
  /** Times the local launcher starts a failed group again (from its checkpoint, if any). */
  maxRestarts: number;
  /** Start afresh over another run's checkpoint in `config.checkpoint.dir`, removing it. */
  overwriteCheckpoint: boolean;
  csv?: string;
  json?: string;
  /** Said on stderr before the run (a `--resume` with nothing to resume, say). */
  notes: string[];
}

/** Reads the data a run names (or the packaged MNIST); a folder that cannot serve is a UsageError. */
export async function readData(dir: string | undefined): Promise<Mnist> {
  const where = dir ?? await packagedMnistDir();
  try {
    if (!(await Deno.stat(where)).isDirectory) {
      throw new DataError("it is a file; expected a folder of MNIST's four IDX files");
    }
    return await loadMnistFolder(where);
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
 * Turns the flags into a plan; throws UsageError for anything not accepted. `data`, when given,
 * stands for the folder's contents (a study or a test reads them once for many runs).
 */
export async function planTraining(v: TrainFlags, data?: Mnist): Promise<TrainPlan> {
  // Before the launch plan, which under --launcher env reads the environment.
  const maxRestarts = v["max-restarts"];
  if (maxRestarts > 0 && v.launcher === "env") {
    throw new UsageError(
      `--max-restarts ${maxRestarts} is not accepted with --launcher env: the external launcher ` +
        "restarts its ranks (torchrun --max-restarts); give them --checkpoint and --resume",
    );
  }
  if (maxRestarts > 0 && v.tabs > 0) {
    throw new UsageError(
      `--max-restarts ${maxRestarts} is not accepted with --tabs ${v.tabs}: the launcher cannot ` +
        "reopen a person's tab; give --checkpoint, and --resume once the tabs are back",
    );
  }
  const launch = planLaunch(v);
  const { launcher, transport, threads, bind, tabs, host, progress } = launch;
  // The trainer's ranks: processes and tabs, × threads each.
  const procs = groupSize(launch);
  const { device } = v;
  const info = TRANSPORTS[transport];
  const memory = oneOf(
    "memory",
    v.memory ?? (device === "gpu" || info.needsDevice ? "gpu" : "shared"),
    info.memory,
  );
  if (progress === "thread" && needsDevice(info, memory)) {
    const given = v.memory
      ? `--memory ${memory}`
      : `--device gpu (its slabs default to gpu memory)`;
    throw new UsageError(
      `--progress thread is not accepted with ${given}: a progress thread carries host memory ` +
        `(host, shared)`,
    );
  }
  const sync = planSync(v, procs, memory);
  const model = planModel(v);
  const timeoutMs = v.timeout * 1000;
  const { csv, json } = outputFiles(v);
  const checkpoint = checkpointOptions(v, sync.sync, device);
  await requireDevice(
    trainingNeedsDevice({ device, transport, memory }),
    device === "gpu"
      ? "--device gpu"
      : info.needsDevice
      ? `--transport ${transport}`
      : `--memory ${memory}`,
  );
  // The data last: reading it takes a moment, and every cheaper mistake is reported first.
  const { mnist, ...samples } = await planData(v, data, model.layers, sync.computing);
  if (sync.reproducible && samples.batch * sync.computing > MAX_REPRODUCIBLE_ROWS) {
    throw new UsageError(
      `--batch ${samples.batch} is not accepted with --reproducible: a global batch of ` +
        `${samples.batch * sync.computing} is more than the ${MAX_REPRODUCIBLE_ROWS} rows its ` +
        "sums hold exactly",
    );
  }
  const { computing: _, ...syncing } = sync;
  const config: TrainConfig<TransportName> = {
    procs,
    transport,
    memory,
    ...syncing,
    ...model,
    ...samples,
    device,
    timeoutMs,
    checkpoint,
    resume: v.resume ? "latest" : v["resume-previous"] ? "previous" : undefined,
  };
  // A worker torchrun started again (its own --max-restarts) goes on from the checkpoint.
  const relaunched = launcher === "env" &&
    Number(Deno.env.get("TORCHELASTIC_RESTART_COUNT") ?? "0") > 0;
  if (relaunched && checkpoint) config.resume = resumable(checkpoint.dir, config);
  const notes: string[] = [];
  if (config.resume) {
    const flag = config.resume === "latest" ? "--resume" : "--resume-previous";
    const found = readCheckpoint(checkpoint!.dir, config, config.resume);
    if (typeof found === "string") throw new UsageError(`${flag}: ${found}`);
    const epochSteps = Math.floor(
      (config.trainSamples ?? mnist.train.count) / (config.batch * sync.computing),
    );
    if (found && found.step >= epochSteps) {
      throw new UsageError(
        `${flag}: ${checkpoint!.dir}/${META_FILES[config.resume]} is not a checkpoint this run ` +
          `can go on from: its step ${found.step} of epoch ${found.epoch + 1} is past the ` +
          `${epochSteps} steps of an epoch of this run`,
      );
    }
    // Nothing to go on from: the first run of a job that always says --resume (torchrun's way).
    if (!found && config.resume === "latest") {
      notes.push(`--resume: ${checkpoint!.dir} holds no checkpoint yet; starting fresh`);
      config.resume = undefined;
    } else if (!found) {
      throw new UsageError(`${flag}: ${checkpoint!.dir} holds no checkpoint`);
    }
  } else if (checkpoint && !v["overwrite-checkpoint"]) {
    const held = Object.values(META_FILES).find((f) => isFile(`${checkpoint.dir}/${f}`));
    if (held) {
      throw new UsageError(
        `--checkpoint ${checkpoint.dir} holds another run's checkpoint (${held}): --resume goes ` +
          `on from it; --overwrite-checkpoint starts afresh and replaces it`,
      );
    }
  }
  return {
    config,
    mnist,
    launcher,
    threads,
    bind,
    progress,
    tabs,
    host,
    maxRestarts,
    overwriteCheckpoint: v["overwrite-checkpoint"],
    csv,
    json,
    notes,
  };
}

/** The strategy and how it synchronises: `--sync`, `--sync-every`, `--ps-mode`, the gradients. */
function planSync(v: TrainFlags, procs: number, memory: TrainConfig["memory"]) {
  const { sync, "sync-every": syncEvery, "ps-mode": psMode, "grad-dtype": gradDtype } = v;
  const computing = STRATEGIES[sync].computing(procs).length;
  if (computing === 0) {
    throw new UsageError(
      `--procs ${procs} is not accepted with --sync ps: rank 0 serves, so it needs at least 2`,
    );
  }
  if (psMode !== "sync" && sync !== "ps") {
    throw new UsageError(`--ps-mode ${psMode} is not accepted: it applies to --sync ps`);
  }
  const errorFeedback = v["error-feedback"], reproducible = v.reproducible;
  checkGradDtype(gradDtype, errorFeedback, sync, memory);
  if (reproducible) checkReproducible(v, memory);
  const bucketBytes = Math.round(v["bucket-mb"] * 2 ** 20);
  return {
    sync,
    computing,
    syncEvery,
    psMode,
    bucketBytes,
    gradDtype,
    errorFeedback,
    reproducible,
  };
}

/** The model and its optimisation: `--layers`, `--act`, `--epochs`, `--lr`, `--momentum`, `--seed`. */
function planModel(v: TrainFlags) {
  const { layers, act: activation, epochs, lr, momentum, seed } = v;
  if (layers.length < 2 || layers.at(-1) !== MNIST_CLASSES) {
    throw new UsageError(
      `--layers ${layers} is not accepted: widths from the images' pixels (784 for MNIST) to ` +
        `${MNIST_CLASSES} (its classes), like 784,256,10`,
    );
  }
  return { layers, activation, epochs, lr, momentum, seed };
}

/**
 * The data and what of it a run takes: `--data` (or `data`, read already), `--train-samples`,
 * `--test-samples` and `--batch`, checked against the model's first width and the ranks computing.
 */
async function planData(
  v: TrainFlags,
  data: Mnist | undefined,
  layers: number[],
  computing: number,
) {
  const mnist = data ?? await readData(v.data);
  const dataFlag = `--data ${mnist.dir}`;
  const pixels = mnist.train.pixels;
  if (layers[0] !== pixels) {
    throw new UsageError(
      `--layers ${layers} is not accepted with ${dataFlag}: its images have ${pixels} pixels, ` +
        `so the first width must be ${pixels}`,
    );
  }
  const trainSamples = atMost("train-samples", v["train-samples"], mnist.train.count);
  const testSamples = atMost("test-samples", v["test-samples"], mnist.test.count);
  const trainCount = trainSamples ?? mnist.train.count;
  const batch = atMost("batch", v.batch, Math.floor(trainCount / computing)) ??
    Math.max(1, Math.round(64 / computing));
  if (batch * computing > trainCount) {
    const flag = trainSamples === undefined ? dataFlag : `--train-samples ${trainSamples}`;
    throw new UsageError(
      `${flag} is not accepted: a global batch of ${batch * computing} (batch ${batch} on each ` +
        `of ${computing} computing ranks) needs at least ${batch * computing} training images`,
    );
  }
  return { mnist, trainSamples, testSamples, batch };
}

/** A count flag checked against what the data holds (from 1 to `max`), if given. */
function atMost(flag: string, count: number | undefined, max: number): number | undefined {
  return count === undefined ? undefined : integer(flag, String(count), 1, max);
}

/** `--reproducible`, checked against what it applies to (one line each: what it needs). */
function checkReproducible(v: TrainFlags, memory: TrainConfig["memory"]): void {
  const needs = (flag: string, why: string) =>
    new UsageError(`--reproducible is not accepted with ${flag}: ${why}`);
  if (v.sync !== "allreduce") {
    throw needs(`--sync ${v.sync}`, "it sums gradients (--sync allreduce)");
  }
  if (v["sync-every"] !== 1) {
    throw needs(`--sync-every ${v["sync-every"]}`, "it sums each batch's rows (--sync-every 1)");
  }
  if (v["grad-dtype"] !== "f32") {
    throw needs(`--grad-dtype ${v["grad-dtype"]}`, "its sums are rounded once, to f32");
  }
  if (v.device !== "cpu") throw needs(`--device ${v.device}`, "its sums are f64 (WGSL has none)");
  if (memory !== "host" && memory !== "shared") {
    throw needs(`--memory ${memory}`, "its sums are made on the host (--memory shared or host)");
  }
}

/** `--grad-dtype` and `--error-feedback`, checked against the strategy and the slabs' memory. */
function checkGradDtype(
  gradDtype: GradDtype,
  errorFeedback: boolean,
  sync: TrainConfig<TransportName>["sync"],
  memory: TrainConfig<TransportName>["memory"],
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

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/**
 * The checkpoint set in `dir` a run with `config` can go on from: the latest if it verifies,
 * else the one before it if that does; `undefined` when neither does.
 */
export function resumable(dir: string, config: TrainConfig): "latest" | "previous" | undefined {
  return (["latest", "previous"] as const).find((which) =>
    typeof readCheckpoint(dir, config, which) === "object"
  );
}

/** The checkpoint flags, checked against each other. */
function checkpointOptions(
  v: TrainFlags,
  sync: TrainConfig<TransportName>["sync"],
  device: TrainConfig<TransportName>["device"],
): CheckpointOptions | undefined {
  const dir = v.checkpoint;
  const flags = ["resume", "resume-previous", "overwrite-checkpoint", "checkpoint-every"] as const;
  if (dir === undefined) {
    const given = flags.find((f) => v.given.has(f));
    if (given) throw new UsageError(`--${given} is not accepted without --checkpoint DIR`);
    return undefined;
  }
  const switches = flags.slice(0, 3).filter((f) => v[f]);
  if (switches.length > 1) {
    throw new UsageError(`--${switches[0]} and --${switches[1]} are not accepted together`);
  }
  const every = v["checkpoint-every"];
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
  const hosts = c.procs / plan.threads;
  const threads = plan.threads > 1
    ? ` (${
      plan.tabs ? `${hosts - plan.tabs} processes and ${plan.tabs} tabs` : `${hosts} processes`
    } × ${plan.threads} threads)`
    : "";
  const computing = STRATEGIES[c.sync].computing(c.procs).length;
  const every = c.syncEvery === "epoch"
    ? "once per epoch"
    : c.syncEvery === 1
    ? "every batch"
    : `every ${c.syncEvery} batches`;
  const half = c.gradDtype === "f32"
    ? (c.reproducible ? ", reproducible gradients" : "")
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

/** Whether a run's ranks need a WebGPU device: the model computes there, or collectives do. */
export function trainingNeedsDevice(
  c: Pick<TrainConfig<TransportName>, "device" | "transport" | "memory">,
): boolean {
  return c.device === "gpu" || needsDevice(TRANSPORTS[c.transport], c.memory);
}
