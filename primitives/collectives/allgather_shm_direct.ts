import type { TypedArray } from "../types.ts";
import { copy } from "../../kernels/copy.ts";
import type { CollectiveContext } from "./context.ts";
import { ONE_ARRIVAL_BYTES, requireViews, sharedAccess } from "./_shm_direct.ts";
import type { HostAlgorithm } from "./algorithm.ts";

/**
 * Direct shared-memory allgather (`shm` only): every rank copies every peer's block from its heap.
 * A block within {@linkcode ONE_ARRIVAL_BYTES} travels in an eager slot: one arrival instead of
 * two, and no views.
 */
export function allgatherShmDirect(
  ctx: CollectiveContext,
  send: TypedArray,
  recv: TypedArray,
): void {
  const shared = sharedAccess(ctx, "shm_direct");
  if (send.byteLength <= ONE_ARRIVAL_BYTES) {
    shared.eagerExchange(send, ctx.stamp).forEach((slot, r) => copy(recv, slot, r * send.length));
    return;
  }
  const views = requireViews(shared.exchangeViews(ctx.staged(send, 2), ctx.stamp));
  views.forEach((v, r) => copy(recv, v, r * send.length));
  shared.barrier(ctx.stamp);
}

/** allgather `shm_direct` (see {@linkcode allgatherShmDirect}). */
export const ALLGATHER_SHM_DIRECT: HostAlgorithm<"allgather"> = {
  name: "shm_direct",
  collective: "allgather",
  needs: "shared",
  run: allgatherShmDirect,
  // Direct access moves each byte across memory once: ahead of every other at every size.
  winsBelow: () => Infinity,
};
