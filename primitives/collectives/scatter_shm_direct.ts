import { dtypeOf, type TypedArray } from "../types.ts";
import type { CollectiveContext } from "./context.ts";
import { sharedAccess } from "./_shm_direct.ts";
import type { HostAlgorithm } from "./algorithm.ts";

/** Direct shared-memory scatter (`shm` only): every rank copies its block from the root's heap. */
export function scatterShmDirect(
  ctx: CollectiveContext,
  send: TypedArray,
  recv: TypedArray,
  root: number,
): void {
  const shared = sharedAccess(ctx, "shm_direct");
  const n = recv.length;
  // Only the root's buffer is read; the others publish a view of its length (views must match).
  const mine = ctx.rank === root
    ? ctx.staged(send, 2)
    : ctx.scratch(dtypeOf(recv), ctx.size * n, 2);
  const views = shared.exchangeViews(mine, ctx.stamp);
  const from = views[root];
  if (!from) throw new TypeError(`Algorithm shm_direct: the root's buffer is not in its heap`);
  if (ctx.rank !== root) recv.set(from.subarray(ctx.rank * n, (ctx.rank + 1) * n));
  else recv.set(send.subarray(root * n, (root + 1) * n));
  shared.barrier(ctx.stamp); // every rank has read the root's buffer
}

/** scatter `shm_direct` (see {@linkcode scatterShmDirect}). */
export const SCATTER_SHM_DIRECT: HostAlgorithm<"scatter"> = {
  name: "shm_direct",
  collective: "scatter",
  needs: "shared",
  // Scratch: the root's blocks.
  scratch: (count) => count,
  run: scatterShmDirect,
  // Direct access moves each byte across memory once: ahead of every other at every size.
  winsBelow: () => Infinity,
};
