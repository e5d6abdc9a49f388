import type { TypedArray } from "../types.ts";
import type { CollectiveContext } from "./context.ts";
import type { HostAlgorithm } from "./algorithm.ts";

/** Linear gather: every rank sends its block straight to the root, which posts every receive at once. */
export async function gatherLinear(
  ctx: CollectiveContext,
  send: TypedArray,
  recv: TypedArray,
  root: number,
): Promise<void> {
  const { rank, size } = ctx;
  const n = send.length;
  if (rank !== root) return void await ctx.send(root, send);
  recv.set(send, root * n);
  const receives: Promise<unknown>[] = [];
  for (let r = 0; r < size; r++) {
    if (r !== root) receives.push(ctx.recv(r, recv.subarray(r * n, (r + 1) * n)));
  }
  await Promise.all(receives);
}

/** gather `linear` (see {@linkcode gatherLinear}). */
export const GATHER_LINEAR: HostAlgorithm<"gather"> = {
  name: "linear",
  collective: "gather",
  needs: "messages",
  run: gatherLinear,
  // The binomial tree's copies (its subtree blocks, then the root's reordering) cost more than
  // the root's n − 1 receives at every size measured.
  winsBelow: () => Infinity,
};
