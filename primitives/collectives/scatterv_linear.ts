import type { TypedArray } from "../types.ts";
import { blockOf } from "./_counts.ts";
import type { CollectiveContext } from "./context.ts";
import type { HostAlgorithm } from "./algorithm.ts";
import type { Layout } from "./spec.ts";

/**
 * Linear scatterv (MPICH's and Open MPI's basic one): the root posts a send of each rank's block
 * and copies its own; every other rank receives its block once.
 */
export async function scattervLinear(
  ctx: CollectiveContext,
  send: TypedArray,
  recv: TypedArray,
  root: number,
  { sendCounts, sendDispls }: Layout,
): Promise<void> {
  const { rank, size } = ctx;
  if (rank !== root) return void await ctx.recv(root, recv);
  recv.set(blockOf(send, sendCounts, sendDispls, root)); // in place, a copy onto itself
  const posted: unknown[] = [];
  for (let r = 0; r < size; r++) {
    if (r !== root) posted.push(ctx.send(r, blockOf(send, sendCounts, sendDispls, r)));
  }
  await Promise.all(posted);
}

/** scatterv `linear` (see {@linkcode scattervLinear}). */
export const SCATTERV_LINEAR: HostAlgorithm<"scatterv"> = {
  name: "linear",
  collective: "scatterv",
  needs: "messages",
  run: scattervLinear,
  winsBelow: () => Infinity,
};
