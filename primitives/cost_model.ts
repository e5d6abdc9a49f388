/**
 * What `auto` picks between hosts: each message algorithm's time from the measured costs of the
 * links (Hockney's α–β model with a reduction term γ), the cheapest one winning. The costs come
 * from `calibrateLinks` when a group spans hosts; on one machine `auto` keeps the crossovers
 * measured on loopback (docs/auto.md, "Between hosts").
 * @module
 */

import { chainSegmentBytes } from "./collectives/_chain.ts";
import { ringSegmentBytes } from "./collectives/_ring.ts";
import type { CollectiveName, LinkCosts } from "./types.ts";

export type { LinkCosts };

/**
 * The time of `algorithm` for `collective` over `size` ranks and `bytes` per rank, in µs, or
 * `undefined` for an algorithm the model does not price (it is then never picked).
 *
 * An allreduce ends when every rank has every byte, so its critical path sets the pace: α per
 * step, β per byte a rank sends, γ per byte it reduces — except in the ring, which reduces a
 * segment while the next arrives and so shows only one segment's reduction per step. A bcast or
 * reduce returns on the root (or the leaves) before its data has crossed the group, so calls in
 * a row overlap and the busiest rank's sends set the pace: a tree's root sends the buffer once
 * per round, a chain's ranks each send it once (docs/auto.md, "Between hosts").
 */
export function estimateUs(
  collective: CollectiveName,
  algorithm: string,
  bytes: number,
  size: number,
  { latencyUs: a, usPerByte: b, reduceUsPerByte: g }: LinkCosts,
): number | undefined {
  if (size === 1) return 0;
  const n = bytes, p = size;
  const pof2 = 2 ** Math.floor(Math.log2(p));
  const steps = Math.log2(pof2), rounds = Math.ceil(Math.log2(p));
  // Ranks beyond a power of two fold their data in first and get the result back after.
  const fold = pof2 < p ? 2 * (a + n * b) + n * g : 0;
  const share = (p - 1) / p;
  const chainSegments = Math.max(1, Math.ceil(n / chainSegmentBytes(n)));
  switch (`${collective}/${algorithm}`) {
    case "allreduce/recursive_doubling":
      return fold + steps * (a + n * (b + g));
    case "allreduce/rabenseifner":
      return fold + 2 * steps * a + ((pof2 - 1) / pof2) * n * (2 * b + g);
    case "allreduce/ring":
      return 2 * (p - 1) * a + 2 * share * n * b +
        (p - 1) * Math.min(n / p, ringSegmentBytes(n / p)) * g;
    case "bcast/binomial":
      return rounds * (a + n * b);
    case "bcast/scatter_allgather":
      return 2 * (p - 1) * a + 2 * share * n * b;
    case "bcast/chain":
      return chainSegments * a + n * b;
    case "reduce/binomial":
      return rounds * (a + n * (b + g));
    case "reduce/scatter_gather":
      return 2 * (p - 1) * a + share * n * (2 * b + g);
    case "reduce/chain":
      return chainSegments * a + n * (b + g);
  }
  return undefined;
}

/** The cheapest of `algorithms` by {@linkcode estimateUs}, or `undefined` if it prices none. */
export function cheapestAlgorithm(
  collective: CollectiveName,
  algorithms: readonly string[],
  bytes: number,
  size: number,
  costs: LinkCosts,
): string | undefined {
  let best: string | undefined, bestUs = Infinity;
  for (const algorithm of algorithms) {
    const us = estimateUs(collective, algorithm, bytes, size, costs);
    if (us !== undefined && us < bestUs) [best, bestUs] = [algorithm, us];
  }
  return best;
}
