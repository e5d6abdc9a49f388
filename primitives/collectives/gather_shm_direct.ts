import type { TypedArray } from "../types.ts";
import { copy } from "../../kernels/copy.ts";
import type { CollectiveContext } from "./context.ts";
import { doneReading, readSends, sharedAccess } from "./_shm_direct.ts";
import type { HostAlgorithm } from "./algorithm.ts";

/**
 * Direct shared-memory gather (`shm` only): the root copies every rank's block from its heap. A
 * block within `ONE_ARRIVAL_BYTES` (`readSends`) travels in an eager slot: one arrival instead of two.
 */
export function gatherShmDirect(
  ctx: CollectiveContext,
  send: TypedArray,
  recv: TypedArray,
  root: number,
): void {
  const shared = sharedAccess(ctx, "shm_direct");
  const views = readSends(ctx, shared, send);
  if (ctx.rank === root) views.forEach((v, r) => copy(recv, v, r * send.length));
  doneReading(ctx, shared, send); // the root has read every send buffer
}

/** gather `shm_direct` (see {@linkcode gatherShmDirect}). */
export const GATHER_SHM_DIRECT: HostAlgorithm<"gather"> = {
  name: "shm_direct",
  collective: "gather",
  needs: "shared",
  run: gatherShmDirect,
  // Direct access moves each byte across memory once: ahead of every other at every size.
  winsBelow: () => Infinity,
};
