import type { TypedArray } from "../types.ts";
import { blockOf } from "./_counts.ts";
import type { CollectiveContext } from "./context.ts";
import type { HostAlgorithm } from "./algorithm.ts";
import type { Layout } from "./spec.ts";

/**
 * Linear gatherv (MPICH's and Open MPI's basic one): the root posts a receive per rank into its
 * block and copies its own; every other rank sends its block once.
 */
export async function gathervLinear(
  ctx: CollectiveContext,
  send: TypedArray,
  recv: TypedArray,
  root: number,
  { recvCounts, recvDispls }: Layout,
): Promise<void> {
  const { rank, size } = ctx;
  if (rank !== root) return await ctx.send(root, send);
  blockOf(recv, recvCounts, recvDispls, root).set(send); // in place, a copy onto itself
  const posted: unknown[] = [];
  for (let r = 0; r < size; r++) {
    if (r !== root) posted.push(ctx.recv(r, blockOf(recv, recvCounts, recvDispls, r)));
  }
  await Promise.all(posted);
}

/** gatherv `linear` (see {@linkcode gathervLinear}). */
export const GATHERV_LINEAR: HostAlgorithm<"gatherv"> = {
  name: "linear",
  collective: "gatherv",
  needs: "messages",
  run: gathervLinear,
  winsBelow: () => Infinity,
};
