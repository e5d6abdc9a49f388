import { reduce } from "../../kernels/reduce.ts";
import { dtypeOf, type KernelOp, type TypedArray } from "../types.ts";
import type { CollectiveContext } from "./context.ts";
import { doneReading, readSends, sharedAccess } from "./_shm_direct.ts";
import type { HostAlgorithm } from "./algorithm.ts";

/**
 * Direct shared-memory reduce-scatter (`shm` only): rank r reduces block r of every peer's heap. A
 * send buffer within `ONE_ARRIVAL_BYTES` (`readSends`) travels in an eager slot: one arrival instead of
 * two.
 */
export function reduceScatterShmDirect(
  ctx: CollectiveContext,
  send: TypedArray,
  recv: TypedArray,
  op: KernelOp,
): void {
  const shared = sharedAccess(ctx, "shm_direct");
  const { rank, size } = ctx;
  const n = recv.length;
  const views = readSends(ctx, shared, send);
  const block = (r: number) => views[r].subarray(rank * n, (rank + 1) * n);
  const out = ctx.heap.owns(recv) ? recv : ctx.scratch(dtypeOf(recv), n, 3);
  // This rank's own block first: in place it is `recv`, which the sum then overwrites.
  out.set(block(rank));
  for (let k = 1; k < size; k++) reduce(op, out, out, block((rank + k) % size));
  if (out !== recv) recv.set(out);
  doneReading(ctx, shared, send); // every peer has read its block of this rank's send
}

/** reduceScatter `shm_direct` (see {@linkcode reduceScatterShmDirect}). */
export const REDUCE_SCATTER_SHM_DIRECT: HostAlgorithm<"reduceScatter"> = {
  name: "shm_direct",
  collective: "reduceScatter",
  needs: "shared",
  run: reduceScatterShmDirect,
  // Direct access moves each byte across memory once: ahead of every other at every size.
  winsBelow: () => Infinity,
};
