/**
 * The per-batch breakdown of the seeds' GPU study, for any engine: upload (gathering a batch and
 * handing it to the device), kernels (a training step and its update, the batch resident) and
 * download (reading the scores back), each timed over many batches to its completion. A rank
 * program: `train-study batch` runs it on one rank.
 * @module
 */

import type { Communicator } from "../core.ts";
import type { TrainConfig } from "./config.ts";
import type { Mnist } from "./mnist.ts";
import { createEngine } from "./training_run.ts";

/** What the launcher hands the rank. */
export interface BreakdownArgs {
  config: TrainConfig;
  /** The data (the rank is a worker, or a logical rank on a device, of the launcher's process). */
  mnist: Mnist;
  /** Batches timed per phase. */
  steps: number;
}

/** Milliseconds per batch of each phase. */
export interface Breakdown {
  upload_ms: number;
  kernels_ms: number;
  /** One read of the scores; training reads them once per epoch. */
  download_ms: number;
}

/** Measures the breakdown on this rank. */
export async function run(comm: Communicator, args: BreakdownArgs): Promise<Breakdown> {
  const { config, steps } = args;
  const mnist = args.mnist;
  const engine = await createEngine(comm, config, mnist, config.batch);
  try {
    await engine.initParams(config.seed);
    const batch = (s: number) =>
      Array.from({ length: config.batch }, (_, i) => (s * config.batch + i) % mnist.train.count);
    // Warm-up: compile the kernels and fill the caches of every phase.
    for (let s = 0; s < 3; s++) {
      engine.load(mnist.train, batch(s));
      engine.trainStep(false);
      engine.update(1);
    }
    await engine.takeScores();
    const timed = async (body: (s: number) => void) => {
      await engine.synchronize();
      const start = performance.now();
      for (let s = 0; s < steps; s++) body(s);
      await engine.synchronize();
      return (performance.now() - start) / steps;
    };
    const upload_ms = await timed((s) => engine.load(mnist.train, batch(s)));
    const kernels_ms = await timed(() => {
      engine.trainStep(false);
      engine.update(1);
    });
    const reads: number[] = [];
    for (let i = 0; i < 5; i++) {
      const start = performance.now();
      await engine.takeScores();
      reads.push(performance.now() - start);
    }
    return { upload_ms, kernels_ms, download_ms: reads.sort((a, b) => a - b)[2] };
  } finally {
    engine.dispose();
  }
}
