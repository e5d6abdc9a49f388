import type { TypedArray } from "../types.ts";
import type { CollectiveContext } from "./context.ts";
import { ringAllgather } from "./_ring.ts";
import type { HostAlgorithm } from "./algorithm.ts";

/** Ring allgather: n−1 steps, each passing one rank's block to the right neighbour. */
export async function allgatherRing(
  ctx: CollectiveContext,
  send: TypedArray,
  recv: TypedArray,
): Promise<void> {
  const n = send.length;
  const blocks = Array.from({ length: ctx.size }, (_, r) => recv.subarray(r * n, (r + 1) * n));
  blocks[ctx.rank].set(send);
  await ringAllgather(ctx, blocks, 0);
}

/** allgather `ring` (see {@linkcode allgatherRing}). */
export const ALLGATHER_RING: HostAlgorithm<"allgather"> = {
  name: "ring",
  collective: "allgather",
  needs: "messages",
  run: allgatherRing,
  // The only message algorithm of its collective.
  winsBelow: () => Infinity,
};
