/**
 * `allreduce` (DDP, Horovod, MirroredStrategy): every `--sync-every` batches the gradients,
 * accumulated over those batches, are averaged over ranks (a `sum` allreduce, divided in the
 * update's own pass rather than in one more pass of `avg`), then every rank takes the same SGD
 * step. Gradients go in buckets of whole layers, last layer first (the first
 * bucket at most 1 MiB, the rest at most `--bucket-mb`, as in PyTorch DDP); a bucket's allreduce
 * starts as soon as its layers' gradients are complete. On `worker` and `ws` it then runs while
 * the rest of the backward pass computes (its messages move whenever the backward yields to the
 * event loop, and at the latest when the step awaits it); on `shm` a collective blocks its
 * thread until done, so buckets run one after another between layers and buy nothing there.
 * One sync step in {@linkcode ALONE_EVERY} (the second of an epoch, the tenth, …) reduces its
 * buckets after the backward instead, alone, so that the epoch's row can say how much of the
 * communication the others hid (`hidden_pct`).
 * With `--grad-dtype f16|bf16` buckets travel in half precision (compression.ts).
 * @module
 */

import type { HostBuffer } from "../../core.ts";
import type { Engine } from "../engine.ts";
import {
  atSync,
  broadcastParams,
  everyRank,
  loadBatch,
  shardOf,
  type Strategy,
  type StrategyContext,
  syncInterval,
} from "./strategy.ts";

/** Sync steps per one whose buckets are reduced alone, after the backward (from an epoch's second). */
const ALONE_EVERY = 8;

/** PyTorch DDP's first bucket cap: small, so communication starts early. */
const FIRST_BUCKET_BYTES = 1 << 20;

/** A run of whole layers whose gradients are reduced together. */
export interface Bucket {
  /** The layer whose gradients complete the bucket (its lowest). */
  completedBy: number;
  start: number;
  end: number;
}

/** Buckets of whole layers from the last layer down: the first ≤ 1 MiB, the rest ≤ `bytes`. */
export function gradientBuckets(engine: Engine, bytes: number): Bucket[] {
  const buckets: Bucket[] = [];
  let open: Bucket | undefined;
  for (let l = engine.layers - 1; l >= 0; l--) {
    const [start, end] = engine.span(l);
    const cap = buckets.length === 0 ? Math.min(FIRST_BUCKET_BYTES, bytes) : bytes;
    if (open && (open.end - start) * 4 <= cap) {
      open.start = start;
      open.completedBy = l;
      continue;
    }
    open = { completedBy: l, start, end };
    buckets.push(open);
  }
  return buckets;
}

async function reduceBucket(ctx: StrategyContext, b: Bucket): Promise<void> {
  const { grads } = ctx.engine;
  await grads.toComm(b.start, b.end);
  ctx.allreduceCalls++;
  if (ctx.halfPrecision) {
    await ctx.halfPrecision.allreduce(grads.comm as HostBuffer<Float32Array>, b.start, b.end);
  } else await ctx.comm.allreduce(grads.comm.subarray(b.start, b.end), { op: "sum" });
  await grads.fromComm(b.start, b.end);
}

/** The `allreduce` strategy. */
export const allreduceStrategy: Strategy = {
  computing: everyRank,
  start: broadcastParams,
  replicatedAfter: atSync,
  async epoch(ctx, epoch) {
    const { comm, engine, options, watch, overlap } = ctx;
    const shard = shardOf(ctx, epoch);
    const every = syncInterval(options.syncEvery, shard.steps);
    const buckets = gradientBuckets(engine, options.bucketBytes);
    let accumulated = 0, syncs = 0;
    for (let step = ctx.firstStep; step < shard.steps; step++) {
      loadBatch(ctx, shard, step);
      accumulated++;
      const sync = accumulated === every || step === shard.steps - 1;
      const pending: Promise<void>[] = [];
      const ready = (layer: number) => {
        const bucket = buckets.find((b) => b.completedBy === layer);
        if (!bucket) return;
        watch.lap("compute");
        pending.push(reduceBucket(ctx, bucket));
        watch.lap("comm");
      };
      if (ctx.reproducible) {
        // Every batch: the global batch's sums, the update their mean over its rows.
        engine.trainStep(false);
        await ctx.reproducible.sync(shard.batch, (what) => watch.lap(what));
        engine.update(1 / (shard.batch * comm.size));
        accumulated = 0;
        ctx.progress(step + 1, shard.steps);
        const saving = ctx.stepDone(step + 1, shard.steps, { clean: true });
        if (saving) await saving;
        continue;
      }
      const reduced = sync && comm.size > 1;
      const alone = reduced && syncs++ % ALONE_EVERY === 1;
      const commBefore = watch.comm;
      engine.trainStep(accumulated > 1, reduced && !alone ? ready : undefined);
      watch.lap("compute");
      if (alone) pending.push(...buckets.map((b) => reduceBucket(ctx, b)));
      if (sync) {
        await Promise.all(pending);
        watch.lap("comm");
        if (alone) {
          overlap.aloneMs += watch.comm - commBefore;
          overlap.alone++;
        } else if (reduced) {
          overlap.overlappedMs += watch.comm - commBefore;
          overlap.overlapped++;
        }
        // The sum over ranks becomes their mean here, in the update's pass over the gradients.
        engine.update(1 / (accumulated * comm.size));
        accumulated = 0;
        watch.lap("compute");
      }
      ctx.progress(step + 1, shard.steps);
      const saving = ctx.stepDone(step + 1, shard.steps, { clean: accumulated === 0 });
      if (saving) await saving;
    }
  },
};
