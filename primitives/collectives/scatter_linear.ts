import type { TypedArray } from "../types.ts";
import type { CollectiveContext } from "./context.ts";
import type { HostAlgorithm } from "./algorithm.ts";

/** Linear scatter: the root sends each rank its block directly, every send posted at once. */
export async function scatterLinear(
  ctx: CollectiveContext,
  send: TypedArray,
  recv: TypedArray,
  root: number,
): Promise<void> {
  const { rank, size } = ctx;
  const n = recv.length;
  if (rank !== root) return void await ctx.recv(root, recv);
  recv.set(send.subarray(root * n, (root + 1) * n));
  const sends: Promise<void>[] = [];
  for (let r = 0; r < size; r++) {
    if (r !== root) sends.push(ctx.send(r, send.subarray(r * n, (r + 1) * n)));
  }
  await Promise.all(sends);
}

/** scatter `linear` (see {@linkcode scatterLinear}). */
export const SCATTER_LINEAR: HostAlgorithm<"scatter"> = {
  name: "linear",
  collective: "scatter",
  needs: "messages",
  run: scatterLinear,
  winsBelow: () => Infinity,
};
