import type { TypedArray } from "../types.ts";
import { copy } from "../../kernels/copy.ts";
import { requireAgreed } from "./_counts.ts";
import type { CollectiveContext } from "./context.ts";
import { doneReadingBeside, exchangeBeside, sharedAccess } from "./_shm_direct.ts";
import type { HostAlgorithm } from "./algorithm.ts";
import type { Layout } from "./spec.ts";

/** Nothing beside a gatherv's block: its exchange carries only the views. */
const NOTHING = new Float64Array(0);

/**
 * Direct shared-memory gatherv (`shm` only): every rank publishes its block, and the root copies
 * each from its rank's heap into place, each byte across memory once. A block within
 * `ONE_ARRIVAL_BYTES` travels in its rank's eager slot; when every rank's does, the call
 * is one arrival. A block whose length differs from the root's count for it is a MismatchError
 * naming both ranks.
 */
export function gathervShmDirect(
  ctx: CollectiveContext,
  send: TypedArray,
  recv: TypedArray,
  root: number,
  { recvCounts, recvDispls }: Layout,
): void {
  const shared = sharedAccess(ctx, "shm_direct");
  const exchanged = exchangeBeside(ctx, shared, send, NOTHING);
  if (ctx.rank === root) {
    exchanged.views.forEach((v, r) => {
      requireAgreed("gatherv", root, recvCounts[r], r, v.length);
      copy(recv, v, recvDispls[r]); // in place, the root's own block onto itself
    });
  }
  doneReadingBeside(ctx, shared, exchanged); // the root has read every block
}

/** gatherv `shm_direct` (see {@linkcode gathervShmDirect}). */
export const GATHERV_SHM_DIRECT: HostAlgorithm<"gatherv"> = {
  name: "shm_direct",
  collective: "gatherv",
  needs: "shared",
  run: gathervShmDirect,
  // Direct access moves each byte across memory once: ahead of messages wherever ranks share it.
  winsBelow: () => Infinity,
};
