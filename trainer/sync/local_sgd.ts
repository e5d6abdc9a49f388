/**
 * `local-sgd` (HELENNA's "mpi-avg" K, PyTorch's post-local SGD): every rank takes SGD steps on
 * its own shard, and the ranks' parameters are averaged every `--sync-every` batches and at the
 * end of every epoch. Momentum buffers stay local, as in PyTorch's PostLocalSGDOptimizer.
 * @module
 */

import { epochShard } from "../data.ts";
import { averageParams, broadcastParams, type Strategy, syncInterval } from "./strategy.ts";

/** The `local-sgd` strategy. */
export const localSgdStrategy: Strategy = {
  computing: (size) => Array.from({ length: size }, (_, r) => r),
  start: broadcastParams,
  async epoch(ctx, epoch) {
    const { comm, engine, options, watch } = ctx;
    const shard = epochShard(
      ctx.train.count,
      options.seed,
      epoch,
      comm.rank,
      comm.size,
      options.batch,
    );
    const every = syncInterval(options.syncEvery, shard.steps);
    for (let step = 0; step < shard.steps; step++) {
      engine.load(ctx.train, shard.indices.subarray(step * shard.batch, (step + 1) * shard.batch));
      engine.trainStep(false);
      engine.update(1);
      watch.lap("compute");
      if ((step + 1) % every === 0 || step === shard.steps - 1) {
        if (comm.size > 1) await averageParams(ctx);
        watch.lap("comm");
      }
      ctx.progress(step + 1, shard.steps);
    }
  },
};
