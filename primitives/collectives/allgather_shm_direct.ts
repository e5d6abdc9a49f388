import type { TypedArray } from "../types.ts";
import { copy } from "../../kernels/copy.ts";
import type { CollectiveContext } from "./context.ts";
import { doneReading, readSends, sharedAccess } from "./_shm_direct.ts";
import type { HostAlgorithm } from "./algorithm.ts";

/**
 * Direct shared-memory allgather (`shm` only): every rank copies every peer's block from its heap.
 * A block within `ONE_ARRIVAL_BYTES` travels in an eager slot (`readSends`): one
 * arrival instead of two.
 */
export function allgatherShmDirect(
  ctx: CollectiveContext,
  send: TypedArray,
  recv: TypedArray,
): void {
  const shared = sharedAccess(ctx, "shm_direct");
  readSends(ctx, shared, send).forEach((v, r) => copy(recv, v, r * send.length));
  doneReading(ctx, shared, send);
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
