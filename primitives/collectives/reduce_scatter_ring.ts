import { dtypeOf, type KernelOp, type TypedArray } from "../types.ts";
import { type CollectiveContext, mod } from "./context.ts";
import { ringReduceScatter } from "./_ring.ts";
import type { HostAlgorithm } from "./algorithm.ts";

/**
 * Ring reduce-scatter: n−1 steps on a scratch copy of `send` (which stays unchanged); rank r ends
 * up with block r, so the ring is started one block to the left.
 */
export async function reduceScatterRing(
  ctx: CollectiveContext,
  send: TypedArray,
  recv: TypedArray,
  op: KernelOp,
): Promise<void> {
  const { rank, size } = ctx;
  const n = recv.length;
  const work = ctx.scratch(dtypeOf(send), send.length, 2);
  work.set(send);
  // ringReduceScatter leaves block (rank + 1) complete; rotate so that it is block `rank`.
  const blocks = Array.from({ length: size }, (_, i) => {
    const b = mod(i - 1, size);
    return work.subarray(b * n, (b + 1) * n);
  });
  await ringReduceScatter(ctx, blocks, op);
  recv.set(work.subarray(rank * n, (rank + 1) * n));
}

/** reduceScatter `ring` (see {@linkcode reduceScatterRing}). */
export const REDUCE_SCATTER_RING: HostAlgorithm<"reduceScatter"> = {
  name: "ring",
  collective: "reduceScatter",
  needs: "messages",
  // Scratch: the send buffer's copy, and one chunk of a peer's.
  scratch: (count, size) => count + Math.ceil(count / size),
  run: reduceScatterRing,
  // The only message algorithm of its collective.
  winsBelow: () => Infinity,
};
