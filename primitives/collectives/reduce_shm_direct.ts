import { reduce } from "../../kernels/reduce.ts";
import type { KernelOp, TypedArray } from "../types.ts";
import { chunk, type CollectiveContext } from "./context.ts";
import { reduceSlots, requireViews, sharedAccess } from "./shm_direct.ts";

/**
 * Direct shared-memory reduce (`shm` only): rank r reduces chunk r of every rank's buffer straight
 * into the root's buffer, so all ranks share the work and non-roots' buffers stay untouched.
 * Small buffers go through the eager slots and the root reduces them in rank order; the smallest
 * are pipelined: non-roots leave their data in a slot and return at once.
 */
export function reduceShmDirect(
  ctx: CollectiveContext,
  buf: TypedArray,
  op: KernelOp,
  root: number,
): void {
  const shared = sharedAccess(ctx, "shm_direct");
  const { rank, size } = ctx;
  if (buf.byteLength <= shared.pipeBytes) {
    shared.pipeBegin(ctx.stamp);
    if (rank !== root) return shared.pipeWrite(buf, root);
    // Root first, then the others in rank order: a fixed order, so the bits are deterministic.
    for (let r = 0; r < size; r++) if (r !== root) reduce(op, buf, buf, shared.pipeRead(r, buf));
    return shared.pipeEnd();
  }
  if (buf.byteLength <= shared.eagerBytes) {
    const slots = shared.eagerExchange(buf, ctx.stamp);
    if (rank === root) reduceSlots(op, buf, slots);
    return;
  }
  const mine = ctx.staged(buf, 2);
  const views = requireViews(shared.exchangeViews(mine, ctx.stamp));
  const [s, e] = chunk(buf.length, size, rank);
  const dst = views[root].subarray(s, e);
  for (let r = 0; r < size; r++) if (r !== root) reduce(op, dst, dst, views[r].subarray(s, e));
  shared.barrier(ctx.stamp);
  if (rank === root && mine !== buf) buf.set(mine);
}
