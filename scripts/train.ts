/**
 * `deno task train [flags]`: trains the MNIST MLP data-parallel on dccl's primitives and prints
 * one line per epoch (see `--help`).
 * @module
 */

import { Interrupted, interruptible } from "./_benchmark.ts";
import { parseFlags, usage, UsageError, userPath } from "./_flags.ts";
import { collectMetadata } from "./_metadata.ts";
import { planTraining, runTraining, TRAIN_FLAGS, type TrainPlan } from "./_training.ts";

async function main(argv: string[]): Promise<number> {
  const command = "dccl train";
  let plan: TrainPlan;
  try {
    const values = parseFlags(TRAIN_FLAGS, argv);
    if (values.help) {
      console.log(
        usage("train", "Trains an MNIST MLP data-parallel over dccl's primitives.", TRAIN_FLAGS),
      );
      return 0;
    }
    for (const flag of ["csv", "json"]) if (values[flag]) values[flag] = userPath(values[flag]);
    plan = await planTraining(values);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    console.error(`${command}: ${e.message}`);
    return 2;
  }
  const { mnist: _, ...options } = plan;
  const metadata = await collectMetadata(argv, { ...options.config, csv: plan.csv });
  try {
    await interruptible((signal) => runTraining(plan, { metadata, signal }));
    return 0;
  } catch (e) {
    if (plan.json) removeIfPresent(`${plan.json}.tmp`);
    const message = e instanceof Error ? e.message.split("\n")[0] : String(e);
    const kept = e instanceof Interrupted && plan.csv
      ? `; ${plan.csv} holds the finished epochs`
      : "";
    console.error(`${command}: ${message}${kept}`);
    return e instanceof Interrupted ? 130 : 1;
  }
}

function removeIfPresent(path: string): void {
  try {
    Deno.removeSync(path);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
}

Deno.exit(await main(Deno.args));
