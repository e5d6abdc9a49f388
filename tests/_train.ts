// Test helper for the trainer: MNIST read once per test file (from ../shared/data/mnist where the
// checkout sits beside it, as on CI; else the npm package the CLI uses by default), and training
// runs planned from flag values like the CLI's, returning every rank's result.
import { parseFlags } from "../scripts/common/flags.ts";
import { packagedMnistDir } from "../deno/files/mnist_folder.ts";
import { planTraining, readData, runTraining, TRAIN_FLAGS } from "../scripts/train/training.ts";
import type { RunMetadata } from "../bench/report_format.ts";
import type { TrainRankResult } from "../trainer/training_run.ts";

const SHARED_MNIST = new URL("../../shared/data/mnist", import.meta.url).pathname;

/** The MNIST folder tests use. */
export const MNIST_DIR = await Deno.stat(SHARED_MNIST).then(() => SHARED_MNIST, packagedMnistDir);

export const MNIST = await readData(MNIST_DIR);

const METADATA: RunMetadata = {
  tool: "dccl test",
  deno: Deno.version.deno,
  v8: Deno.version.v8,
  os: Deno.build.os,
  cpu: Deno.build.arch,
  cpus: 1,
  memoryBytes: 0,
  gpuAdapter: null,
  date: new Date(0).toISOString(),
  command: [],
  options: {},
};

/** Flags as the CLI takes them, e.g. `{ procs: "4", sync: "ps" }`. */
export async function train(flags: Record<string, string>): Promise<TrainRankResult[]> {
  // A boolean flag is given as "true".
  const argv = Object.entries(flags).map(([k, v]) => v === "true" ? `--${k}` : `--${k}=${v}`);
  const plan = await planTraining(parseFlags(TRAIN_FLAGS, argv), MNIST);
  return await runTraining(plan, { metadata: METADATA, print: false, returnParams: true });
}

/** Largest absolute difference of two parameter vectors. */
export function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i] - b[i]));
  return d;
}
