import type { KernelOp, TypedArray } from "../types.ts";
import { type CollectiveContext, part } from "./context.ts";
import { ringAllgather, ringReduceScatter } from "./ring.ts";

/**
 * Ring allreduce: ring reduce-scatter then ring allgather, segmented and pipelined.
 * 2(n−1) steps; each rank sends 2(n−1)/n of the buffer — bandwidth-optimal, latency grows with n.
 */
export async function allreduceRing(
  ctx: CollectiveContext,
  buf: TypedArray,
  op: KernelOp,
): Promise<void> {
  if (ctx.size === 1) return;
  const chunks = Array.from({ length: ctx.size }, (_, i) => part(buf, ctx.size, i));
  await ringReduceScatter(ctx, chunks, op);
  await ringAllgather(ctx, chunks, 1);
}
