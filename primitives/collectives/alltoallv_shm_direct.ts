import type { TypedArray } from "../types.ts";
import { copy } from "../../kernels/copy.ts";
import { requireAgreed } from "./_counts.ts";
import type { CollectiveContext } from "./context.ts";
import { doneReadingBeside, exchangeBeside, layoutOf, sharedAccess } from "./_shm_direct.ts";
import type { HostAlgorithm } from "./algorithm.ts";
import type { Layout } from "./spec.ts";

/**
 * Direct shared-memory alltoallv (`shm` only): every rank publishes its send buffer and, beside it
 * in the same arrival, where its blocks lie; then copies its block from every peer's heap, each
 * byte across memory once. A send buffer within `ONE_ARRIVAL_BYTES` travels in the eager
 * slot beside that layout; when every rank's does, the call is one arrival. A count that differs
 * from what its sender says is a MismatchError naming both ranks.
 */
export function alltoallvShmDirect(
  ctx: CollectiveContext,
  send: TypedArray,
  recv: TypedArray,
  { sendCounts, sendDispls, recvCounts, recvDispls }: Layout,
): void {
  const shared = sharedAccess(ctx, "shm_direct");
  const { rank, size } = ctx;
  const where = layoutOf(ctx, sendCounts, sendDispls);
  const exchanged = exchangeBeside(ctx, shared, send, where, recv);
  const views = exchanged.views, wheres = exchanged.besides;
  for (let q = 0; q < size; q++) {
    const n = wheres[q][rank], at = wheres[q][size + rank];
    requireAgreed("alltoallv", rank, recvCounts[q], q, n);
    copy(recv, views[q], recvDispls[q], at, n);
  }
  doneReadingBeside(ctx, shared, exchanged); // every peer has read this rank's blocks
}

/** alltoallv `shm_direct` (see {@linkcode alltoallvShmDirect}). */
export const ALLTOALLV_SHM_DIRECT: HostAlgorithm<"alltoallv"> = {
  name: "shm_direct",
  collective: "alltoallv",
  needs: "shared",
  run: alltoallvShmDirect,
  // Direct access moves each byte across memory once: ahead of messages wherever ranks share it.
  winsBelow: () => Infinity,
};
