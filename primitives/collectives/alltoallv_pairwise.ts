import type { TypedArray } from "../types.ts";
import { blockOf, inputOf } from "./_counts.ts";
import { type CollectiveContext, mod } from "./context.ts";
import type { HostAlgorithm } from "./algorithm.ts";
import type { Layout } from "./spec.ts";

/**
 * Pairwise alltoallv (MPICH's, any rank count): size − 1 steps; in step s each rank sends its
 * block for rank + s and receives the block of rank − s, empty blocks too (so a count two ranks
 * disagree on is a length mismatch, never a wait). Each step waits for its slowest exchange: a
 * skewed matrix pays its heaviest pair at every step it is in.
 */
export async function alltoallvPairwise(
  ctx: CollectiveContext,
  send: TypedArray,
  recv: TypedArray,
  { sendCounts, sendDispls, recvCounts, recvDispls }: Layout,
): Promise<void> {
  const { rank, size } = ctx;
  const input = inputOf(ctx, send, recv);
  blockOf(recv, recvCounts, recvDispls, rank).set(blockOf(input, sendCounts, sendDispls, rank));
  for (let step = 1; step < size; step++) {
    const to = mod(rank + step, size), from = mod(rank - step, size);
    const out = blockOf(input, sendCounts, sendDispls, to);
    await ctx.sendrecv(to, out, from, blockOf(recv, recvCounts, recvDispls, from));
  }
}

/** alltoallv `pairwise` (see {@linkcode alltoallvPairwise}). */
export const ALLTOALLV_PAIRWISE: HostAlgorithm<"alltoallv"> = {
  name: "pairwise",
  collective: "alltoallv",
  needs: "messages",
  run: alltoallvPairwise,
  // Behind scattered at 32 of 34 sizes, balanced and skewed, on worker (docs/results/2026-12-02-osu.md).
};
