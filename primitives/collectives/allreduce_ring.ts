import type { KernelOp, TypedArray } from "../types.ts";
import { type CollectiveContext, part } from "./context.ts";
import { ringAllgather, ringReduceScatter, ringSegmentBytes } from "./_ring.ts";
import type { HostAlgorithm } from "./algorithm.ts";

/**
 * Ring allreduce: ring reduce-scatter then ring allgather, segmented and pipelined.
 * 2(n−1) steps; each rank sends 2(n−1)/n of the buffer — bandwidth-optimal, latency grows with n.
 * Out of place it reads `input` where the in-place ring reads the buffer before reducing into it,
 * so the input is never copied into `output` first.
 */
export async function allreduceRing(
  ctx: CollectiveContext,
  input: TypedArray,
  output: TypedArray,
  op: KernelOp,
): Promise<void> {
  const parts = (buf: TypedArray) =>
    Array.from({ length: ctx.size }, (_, i) => part(buf, ctx.size, i));
  if (ctx.size === 1) {
    if (output !== input) output.set(input);
    return;
  }
  const chunks = parts(output);
  await ringReduceScatter(ctx, chunks, op, output === input ? chunks : parts(input));
  await ringAllgather(ctx, chunks, 1);
}

/** allreduce `ring` (see {@linkcode allreduceRing}). */
export const ALLREDUCE_RING: HostAlgorithm<"allreduce"> = {
  name: "ring",
  collective: "allreduce",
  needs: "messages",
  // Scratch: one chunk of a peer's.
  scratch: (count, size) => Math.ceil(count / size),
  run: allreduceRing,
  // Bandwidth-optimal: every size the latency-bound algorithms do not win.
  winsBelow: () => Infinity,
  // 2(p−1) steps of a chunk each; a segment is reduced while the next arrives, so only one
  // segment's reduction per step shows.
  cost: ({ latencyUs: a, usPerByte: b, reduceUsPerByte: g }, { bytes, size: p }) =>
    2 * (p - 1) * a + 2 * ((p - 1) / p) * bytes * b +
    (p - 1) * Math.min(bytes / p, ringSegmentBytes(bytes / p)) * g,
};
