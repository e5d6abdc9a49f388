import type { TypedArray } from "../types.ts";
import { blockOf, inputOf } from "./_counts.ts";
import { type CollectiveContext, mod } from "./context.ts";
import type { HostAlgorithm } from "./algorithm.ts";
import type { Layout } from "./spec.ts";

/**
 * Scattered alltoallv (MPICH's and Open MPI's linear one): every send and receive posted at once,
 * each pair as `sendrecv` posts it, in the pairwise order so no rank is sent to by all at once
 * first. Nothing waits for a step: under a skewed matrix the light pairs finish while the heavy
 * ones stream, where pairwise makes every step wait for its heaviest exchange.
 */
export async function alltoallvScattered(
  ctx: CollectiveContext,
  send: TypedArray,
  recv: TypedArray,
  { sendCounts, sendDispls, recvCounts, recvDispls }: Layout,
): Promise<void> {
  const { rank, size } = ctx;
  const input = inputOf(ctx, send, recv);
  blockOf(recv, recvCounts, recvDispls, rank).set(blockOf(input, sendCounts, sendDispls, rank));
  const posted: unknown[] = [];
  for (let step = 1; step < size; step++) {
    const to = mod(rank + step, size), from = mod(rank - step, size);
    const out = blockOf(input, sendCounts, sendDispls, to);
    posted.push(ctx.sendrecv(to, out, from, blockOf(recv, recvCounts, recvDispls, from)));
  }
  await Promise.all(posted);
}

/** alltoallv `scattered` (see {@linkcode alltoallvScattered}). */
export const ALLTOALLV_SCATTERED: HostAlgorithm<"alltoallv"> = {
  name: "scattered",
  collective: "alltoallv",
  needs: "messages",
  run: alltoallvScattered,
  // auto cannot see the matrix (no rank knows it): ahead of pairwise balanced and under a zipf
  // skew alike, 1.1–3.3× on worker (docs/results/2026-12-02-osu.md).
  winsBelow: () => Infinity,
};
