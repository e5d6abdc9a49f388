/**
 * Which samples each rank trains on. Every epoch has one
 * permutation of the training set, the same on every rank (seeded by `--seed` and the epoch);
 * rank r of R takes every R-th index from r on, like PyTorch's DistributedSampler, and the last
 * partial global batch is dropped (drop_last), so every step has the same rows on every rank.
 * @module
 */

import { deriveSeed, Random } from "./random.ts";

/** One rank's share of an epoch: its sample indices, in the order it takes them. */
export interface Shard {
  indices: Uint32Array;
  /** Steps in the epoch (the same on every rank). */
  steps: number;
  /** Rows per step on this rank. */
  batch: number;
}

/**
 * Rank `part` of `parts`' samples of epoch `epoch`: `steps` = ⌊count / (batch · parts)⌋ batches
 * of `batch` rows.
 */
export function epochShard(
  count: number,
  seed: number,
  epoch: number,
  part: number,
  parts: number,
  batch: number,
): Shard {
  const order = new Random(deriveSeed(seed, 0x5eed, epoch)).permutation(count);
  const steps = Math.floor(count / (batch * parts));
  const indices = new Uint32Array(steps * batch);
  for (let i = 0; i < indices.length; i++) indices[i] = order[i * parts + part];
  return { indices, steps, batch };
}
