import type { TypedArray } from "../types.ts";
import type { CollectiveContext } from "./context.ts";
import { sharedAccess } from "./shm_direct.ts";

/**
 * Direct shared-memory broadcast (`shm` only): every rank copies straight from the root's buffer
 * (through its eager slot when small, a heap bounce buffer when the root's buffer is `host`).
 * One copy per receiver, 2 barriers.
 */
export function bcastShmDirect(
  ctx: CollectiveContext,
  buf: TypedArray,
  root: number,
): Promise<void> {
  const shared = sharedAccess(ctx, "shm_direct");
  if (buf.byteLength <= shared.eagerBytes) {
    const slots = shared.eagerExchange(buf, "bcast");
    if (ctx.rank !== root) buf.set(slots[root]);
    return Promise.resolve();
  }
  const mine = ctx.rank === root ? ctx.staged(buf, 2) : buf;
  const source = shared.exchangeViews(mine, "bcast")[root];
  if (!source) throw new Error("Internal error: the root's buffer is not in its heap");
  if (ctx.rank !== root) buf.set(source);
  shared.barrier();
  return Promise.resolve();
}
