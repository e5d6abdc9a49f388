import { dtypeOf, type KernelOp, type TypedArray } from "../types.ts";
import { blockOf } from "./_counts.ts";
import { type CollectiveContext, mod } from "./context.ts";
import type { HostAlgorithm } from "./algorithm.ts";
import type { Layout } from "./spec.ts";

/**
 * Pairwise reduce-scatterv (MPICH's for non-commutative-free, unequal blocks): size − 1 steps; in
 * step s each rank sends its block for rank + s and receives its own block of rank − s, which it
 * reduces into `recv` (its own block of `send` first).
 */
export async function reduceScattervPairwise(
  ctx: CollectiveContext,
  send: TypedArray,
  recv: TypedArray,
  op: KernelOp,
  { recvCounts, recvDispls }: Layout,
): Promise<void> {
  const { rank, size } = ctx;
  recv.set(blockOf(send, recvCounts, recvDispls, rank)); // in place, a copy onto itself
  const incoming = ctx.scratch(dtypeOf(recv), recv.length, 0);
  for (let step = 1; step < size; step++) {
    const to = mod(rank + step, size), from = mod(rank - step, size);
    await ctx.sendrecv(to, blockOf(send, recvCounts, recvDispls, to), from, incoming);
    ctx.reduceInto(op, recv, incoming);
  }
}

/** reduceScatterv `pairwise` (see {@linkcode reduceScattervPairwise}). */
export const REDUCE_SCATTERV_PAIRWISE: HostAlgorithm<"reduceScatterv"> = {
  name: "pairwise",
  collective: "reduceScatterv",
  needs: "messages",
  run: reduceScattervPairwise,
  winsBelow: () => Infinity,
};
