import type { TypedArray } from "../types.ts";
import { copy } from "../../kernels/copy.ts";
import type { CollectiveContext } from "./context.ts";
import { doneReading, readSends, sharedAccess } from "./_shm_direct.ts";
import type { HostAlgorithm } from "./algorithm.ts";

/**
 * Direct shared-memory all-to-all (`shm` only): every rank copies its block from every peer's heap.
 * A send buffer within `ONE_ARRIVAL_BYTES` (`readSends`) travels in an eager slot: one arrival instead
 * of two.
 */
export function alltoallShmDirect(
  ctx: CollectiveContext,
  send: TypedArray,
  recv: TypedArray,
): void {
  const shared = sharedAccess(ctx, "shm_direct");
  const n = send.length / ctx.size;
  readSends(ctx, shared, send).forEach((v, q) => copy(recv, v, q * n, ctx.rank * n, n));
  doneReading(ctx, shared, send); // every peer has read this rank's send buffer
}

/** alltoall `shm_direct` (see {@linkcode alltoallShmDirect}). */
export const ALLTOALL_SHM_DIRECT: HostAlgorithm<"alltoall"> = {
  name: "shm_direct",
  collective: "alltoall",
  needs: "shared",
  run: alltoallShmDirect,
  // Direct access moves each byte across memory once: ahead of every other at every size.
  winsBelow: () => Infinity,
};
