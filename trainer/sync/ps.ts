/**
 * `ps` (parameter server): rank 0 holds the parameters and the optimizer and applies updates;
 * ranks 1 … n−1 are workers that push gradients (accumulated over `--sync-every` batches) and
 * pull parameters. `--ps-mode sync` waits for every worker's push, applies their average and
 * sends all the same parameters (a reduce to rank 0 and a broadcast). `async` applies each push
 * as it arrives (`recv` from any rank) and answers that worker alone, so fast workers never wait
 * for slow ones; a push's staleness is the number of other workers' updates applied between its
 * worker's pull and that push. Each epoch ends with every rank holding the server's parameters.
 * @module
 */

import type { CommBuffer } from "../../core.ts";
import type { Shard } from "../data.ts";
import {
  broadcastParams,
  loadBatch,
  shardOf,
  type Strategy,
  type StrategyContext,
  syncInterval,
} from "./strategy.ts";

const PUSH = 1001, PULL = 1002;

/** Rounds of an epoch: pushes per worker, and the batches behind each. */
function rounds(ctx: StrategyContext, epoch: number, worker: number): {
  shard: Shard;
  sizes: number[];
} {
  const shard = shardOf(ctx, epoch, worker, ctx.comm.size - 1);
  const every = syncInterval(ctx.options.syncEvery, shard.steps);
  const sizes: number[] = [];
  for (let done = 0; done < shard.steps; done += every) {
    sizes.push(Math.min(every, shard.steps - done));
  }
  return { shard, sizes };
}

/** A worker's side of one round: `batches` steps of `shard` from `first`, then push and pull. */
async function workerRound(
  ctx: StrategyContext,
  shard: Shard,
  first: number,
  batches: number,
  total: number,
): Promise<void> {
  const { comm, engine, options, watch } = ctx;
  for (let i = 0; i < batches; i++) {
    const step = first + i;
    loadBatch(ctx, shard, step);
    engine.trainStep(i > 0);
    watch.lap("compute");
    ctx.progress(step + 1, total);
  }
  const { grads, params } = engine;
  await grads.toComm();
  if (options.psMode === "sync") {
    await comm.reduce(grads.comm, { root: 0 });
    await comm.bcast(params.comm, { root: 0 });
  } else {
    await comm.send(grads.comm, 0, { tag: PUSH });
    await comm.recv(params.comm, 0, { tag: PULL });
  }
  await params.fromComm();
  watch.lap("comm");
}

/** The server's side of a synchronous round: the workers' summed gradients, one step. */
async function serverSyncRound(ctx: StrategyContext, zeros: CommBuffer, batches: number) {
  const { comm, engine, watch } = ctx;
  await comm.reduce(zeros, { root: 0, out: engine.grads.comm });
  await engine.grads.fromComm();
  watch.lap("comm");
  engine.update(1 / (batches * (comm.size - 1)));
  watch.lap("compute");
  await engine.params.toComm();
  await comm.bcast(engine.params.comm, { root: 0 });
  watch.lap("comm");
}

/** The server's side of an asynchronous epoch: each push applied as it arrives. */
async function serverAsyncEpoch(ctx: StrategyContext, sizes: number[]): Promise<void> {
  const { comm, engine, watch, staleness } = ctx;
  const workers = comm.size - 1;
  const pushed = new Array(comm.size).fill(0);
  const pulledAt = new Array(comm.size).fill(0);
  let version = 0;
  for (let i = 0; i < workers * sizes.length; i++) {
    const worker = await comm.recv(engine.grads.comm, "any", { tag: PUSH });
    await engine.grads.fromComm();
    watch.lap("comm");
    const stale = version - pulledAt[worker];
    staleness.pushes++;
    staleness.total += stale;
    staleness.max = Math.max(staleness.max, stale);
    engine.update(1 / sizes[pushed[worker]++]);
    version++;
    watch.lap("compute");
    await engine.params.toComm();
    await comm.send(engine.params.comm, worker, { tag: PULL });
    pulledAt[worker] = version;
    watch.lap("comm");
    ctx.progress(i + 1, workers * sizes.length);
  }
}

/** The `ps` strategy. */
export const psStrategy: Strategy = {
  computing: (size) => Array.from({ length: size - 1 }, (_, r) => r + 1),
  start: broadcastParams,
  // Epochs begin and end with every rank holding the server's parameters; within one, workers'
  // copies lag the server's (and no checkpoint is written there).
  replicatedAfter: (step, steps) => step === 0 || step === steps,
  async epoch(ctx, epoch) {
    const { comm, engine } = ctx;
    if (comm.rank === 0) {
      const { sizes } = rounds(ctx, epoch, 0);
      if (ctx.options.psMode === "async") await serverAsyncEpoch(ctx, sizes);
      else {
        const zeros = comm.alloc(engine.grads.comm.length, { memory: engine.grads.comm.memory });
        for (const batches of sizes) await serverSyncRound(ctx, zeros, batches);
        comm.free(zeros);
      }
    } else {
      const { shard, sizes } = rounds(ctx, epoch, comm.rank - 1);
      const total = sizes.reduce((a, b) => a + b, 0);
      let first = 0;
      for (const batches of sizes) {
        await workerRound(ctx, shard, first, batches, total);
        first += batches;
      }
    }
    // Asynchronous workers hold their last pull; everyone evaluates the server's parameters.
    if (ctx.options.psMode === "async") await broadcastParams(ctx);
    ctx.watch.lap("comm");
  },
};
