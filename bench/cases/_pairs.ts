/**
 * What the point-to-point tests of this folder share (OSU's pairs): rank i of the first half
 * talks to rank i + n/2 of the second, so every pair crosses the middle of the group (on a
 * hierarchy or a cluster, as osu_mbw_mr places them).
 * @module
 */

import type { PrimitiveSpec } from "./spec.ts";

/** `rank`'s partner in a group of `size` ranks, and whether it is the one that starts. */
export function pairOf(rank: number, size: number): { peer: number; starts: boolean } {
  const half = size / 2;
  return rank < half ? { peer: rank + half, starts: true } : { peer: rank - half, starts: false };
}

/** Pairs of ranks: an even count (`--pairs N`: 2N ranks). */
export const IN_PAIRS: NonNullable<PrimitiveSpec["ranks"]> = {
  accepts: (ranks) => ranks >= 2 && ranks % 2 === 0,
  rule: "runs on pairs of ranks: an even count (--pairs N: 2N ranks)",
};

/** What every point-to-point test is: no op, no root, no in-place form, busbw = algbw. */
export const POINT_TO_POINT = {
  reduces: false,
  rooted: false,
  inPlace: false,
  busFactor: () => 1,
  busFormula: "1",
  fit: (count: number) => count,
  ranks: IN_PAIRS,
} as const satisfies Partial<PrimitiveSpec>;
