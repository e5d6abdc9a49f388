import type { TypedArray } from "../types.ts";
import { blockOf } from "./_counts.ts";
import { type CollectiveContext, mod } from "./context.ts";
import type { HostAlgorithm } from "./algorithm.ts";
import type { Layout } from "./spec.ts";

/**
 * Ring allgatherv: size − 1 steps; in step s each rank passes the block it got last (its own
 * first) to the right and takes the next from the left, whatever each block's count.
 */
export async function allgathervRing(
  ctx: CollectiveContext,
  send: TypedArray,
  recv: TypedArray,
  { recvCounts, recvDispls }: Layout,
): Promise<void> {
  const { rank, size } = ctx;
  const block = (r: number) => blockOf(recv, recvCounts, recvDispls, r);
  block(rank).set(send); // in place, a copy onto itself
  const right = mod(rank + 1, size), left = mod(rank - 1, size);
  for (let step = 0; step < size - 1; step++) {
    await ctx.sendrecv(
      right,
      block(mod(rank - step, size)),
      left,
      block(mod(rank - step - 1, size)),
    );
  }
}

/** allgatherv `ring` (see {@linkcode allgathervRing}). */
export const ALLGATHERV_RING: HostAlgorithm<"allgatherv"> = {
  name: "ring",
  collective: "allgatherv",
  needs: "messages",
  run: allgathervRing,
  winsBelow: () => Infinity,
};
