/**
 * MPICH's fold for power-of-two algorithms on any rank count: with p2 the largest power of two
 * ≤ size and rem = size − p2, ranks 2i and 2i+1 (i < rem) merge their data first so that p2 ranks
 * take part; the even ones sit out and get the result back at the end.
 * @module
 */

import { dtypeOf, type KernelOp, type LinkCosts, type TypedArray } from "../types.ts";
import type { PricedCall } from "./algorithm.ts";
import type { CollectiveContext } from "./context.ts";

/** The power-of-two group a rank belongs to after folding. */
export interface Fold {
  /** Largest power of two ≤ size. */
  p2: number;
  /** Ranks beyond p2: the first 2·rem ranks fold in pairs (none when size is a power of two). */
  rem: number;
  /** Rank inside the power-of-two group, or −1 for a rank that sits out. */
  newRank: number;
  /** This rank is one of the first 2·rem, which fold in pairs ({@linkcode foldIn}, `foldOut`). */
  paired: boolean;
}

/** This rank's place in the fold (no messages). */
export function foldOf(ctx: CollectiveContext): Fold {
  const { rank, size } = ctx;
  const p2 = 1 << Math.floor(Math.log2(size));
  const rem = size - p2;
  const paired = rank < 2 * rem;
  const newRank = !paired ? rank - rem : rank % 2 === 0 ? -1 : rank >> 1;
  return { p2, rem, newRank, paired };
}

/** The real rank of group member `newRank`. */
export function realRank(fold: Fold, newRank: number): number {
  return newRank < fold.rem ? newRank * 2 + 1 : newRank + fold.rem;
}

/** A paired rank folds `buf` into the power-of-two group (1 message). */
export async function foldIn(ctx: CollectiveContext, buf: TypedArray, op: KernelOp): Promise<void> {
  const { rank } = ctx;
  if (rank % 2 === 0) {
    await ctx.send(rank + 1, buf);
    return;
  }
  const tmp = ctx.scratch(dtypeOf(buf), buf.length, 1);
  await ctx.recv(rank - 1, tmp);
  ctx.reduceInto(op, buf, tmp);
}

/** A paired rank returns the result to the rank that sat out, or gets it back (1 message). */
export async function foldOut(ctx: CollectiveContext, buf: TypedArray): Promise<void> {
  if (ctx.rank % 2 === 0) await ctx.recv(ctx.rank + 1, buf);
  else await ctx.send(ctx.rank - 1, buf);
}

/** Largest power of two ≤ `size`. */
export function powerOfTwoBelow(size: number): number {
  return 2 ** Math.floor(Math.log2(size));
}

/**
 * What the fold adds to a call between hosts (none on a power of two): a paired rank's message in
 * and, after, out, and one reduction.
 */
export function foldUs(links: LinkCosts, { bytes, size }: PricedCall): number {
  if (powerOfTwoBelow(size) === size) return 0;
  return 2 * (links.latencyUs + bytes * links.usPerByte) + bytes * links.reduceUsPerByte;
}

/** Scratch the fold takes (none on a power of two): the paired rank's buffer. */
export function foldScratch(count: number, size: number): number {
  return powerOfTwoBelow(size) === size ? 0 : count;
}
