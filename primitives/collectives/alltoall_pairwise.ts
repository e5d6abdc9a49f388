import type { TypedArray } from "../types.ts";
import { type CollectiveContext, mod } from "./context.ts";
import type { HostAlgorithm } from "./algorithm.ts";

/**
 * Pairwise all-to-all (MPICH's, for any rank count): size − 1 steps; in step s each rank sends
 * its block for rank + s and receives the block of rank − s, so every step is one exchange per
 * rank and no rank is sent to by two at once.
 */
export async function alltoallPairwise(
  ctx: CollectiveContext,
  send: TypedArray,
  recv: TypedArray,
): Promise<void> {
  const { rank, size } = ctx;
  const n = send.length / size;
  const block = (v: TypedArray, r: number) => v.subarray(r * n, (r + 1) * n);
  block(recv, rank).set(block(send, rank));
  for (let step = 1; step < size; step++) {
    const to = mod(rank + step, size), from = mod(rank - step, size);
    await ctx.sendrecv(to, block(send, to), from, block(recv, from));
  }
}

/** alltoall `pairwise` (see {@linkcode alltoallPairwise}). */
export const ALLTOALL_PAIRWISE: HostAlgorithm<"alltoall"> = {
  name: "pairwise",
  collective: "alltoall",
  needs: "messages",
  run: alltoallPairwise,
  // The only message algorithm of its collective.
  winsBelow: () => Infinity,
};
