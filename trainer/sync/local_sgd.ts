/**
 * `local-sgd` (HELENNA's "mpi-avg" K, PyTorch's post-local SGD): every rank takes SGD steps on
 * its own shard, and the ranks' parameters are averaged every `--sync-every` batches and at the
 * end of every epoch. Momentum buffers stay local, as in PyTorch's PostLocalSGDOptimizer.
 * @module
 */

import {
  atSync,
  averageParams,
  broadcastParams,
  everyRank,
  loadBatch,
  shardOf,
  type Strategy,
  syncInterval,
} from "./strategy.ts";

/** The `local-sgd` strategy. */
export const localSgdStrategy: Strategy = {
  computing: everyRank,
  start: broadcastParams,
  replicatedAfter: atSync,
  async epoch(ctx, epoch) {
    const { comm, engine, options, watch } = ctx;
    const shard = shardOf(ctx, epoch);
    const every = syncInterval(options.syncEvery, shard.steps);
    for (let step = ctx.firstStep; step < shard.steps; step++) {
      loadBatch(ctx, shard, step);
      engine.trainStep(false);
      engine.update(1);
      watch.lap("compute");
      const synced = (step + 1) % every === 0 || step === shard.steps - 1;
      if (synced && comm.size > 1) await averageParams(ctx);
      if (synced) watch.lap("comm");
      ctx.progress(step + 1, shard.steps);
      // Each rank's own parameters and momentum are checkpointed: any step will do.
      const saving = ctx.stepDone(step + 1, shard.steps, { clean: true });
      if (saving) await saving;
    }
  },
};
