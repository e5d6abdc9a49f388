import type { TypedArray } from "../types.ts";
import { copy } from "../../kernels/copy.ts";
import { requireAgreed } from "./_counts.ts";
import type { CollectiveContext } from "./context.ts";
import {
  doneReadingBeside,
  exchangeBeside,
  layoutOf,
  layoutScratch,
  sharedAccess,
} from "./_shm_direct.ts";
import type { HostAlgorithm } from "./algorithm.ts";
import type { Layout } from "./spec.ts";

/**
 * Direct shared-memory scatterv (`shm` only): the root publishes its send buffer and, beside it in
 * the same arrival, where each rank's block lies; every rank copies its block from the root's
 * heap, each byte across memory once. A send buffer within `ONE_ARRIVAL_BYTES` travels in
 * the root's eager slot: one arrival. A `recv` whose length differs from the root's count for it
 * is a MismatchError naming both ranks.
 */
export function scattervShmDirect(
  ctx: CollectiveContext,
  send: TypedArray,
  recv: TypedArray,
  root: number,
  { sendCounts, sendDispls }: Layout,
): void {
  const shared = sharedAccess(ctx, "shm_direct");
  const { rank, size } = ctx;
  const isRoot = rank === root;
  // Every rank's `where` has the root's shape; only the root's is read.
  const where = isRoot ? layoutOf(ctx, sendCounts, sendDispls) : layoutScratch(ctx);
  // Another rank publishes nothing of its own: an empty view, in its slot.
  const exchanged = exchangeBeside(ctx, shared, isRoot ? send : recv.subarray(0, 0), where);
  const from = exchanged.views[root], layout = exchanged.besides[root];
  const n = layout[rank], at = layout[size + rank];
  requireAgreed("scatterv", rank, recv.length, root, n);
  copy(recv, from, 0, at, n); // in place, the root's own block onto itself
  doneReadingBeside(ctx, shared, exchanged); // every rank has read its block
}

/** scatterv `shm_direct` (see {@linkcode scattervShmDirect}). */
export const SCATTERV_SHM_DIRECT: HostAlgorithm<"scatterv"> = {
  name: "shm_direct",
  collective: "scatterv",
  needs: "shared",
  run: scattervShmDirect,
  // Direct access moves each byte across memory once: ahead of messages wherever ranks share it.
  winsBelow: () => Infinity,
};
