import { reduce } from "../../kernels/reduce.ts";
import type { WasmOp } from "../../kernels/reduce_wat.ts";
import type { TypedArray } from "../types.ts";
import { chunk, type CollectiveContext } from "./context.ts";
import { reduceSlots, requireViews, sharedAccess } from "./shm_direct.ts";

/**
 * Direct shared-memory allreduce (`shm` only). Small buffers: every rank copies its data into its
 * eager slot, one arrival flag per rank, then every rank reduces all slots in rank order — one
 * handoff. Large buffers: ranks publish their heap buffers; rank r reduces chunk r by reading
 * every peer's chunk r in place, then copies every other reduced chunk from its owner — 3 barriers,
 * each byte read n times and written twice, no messages. `host` buffers go through a heap bounce
 * buffer.
 */
export function allreduceShmDirect(
  ctx: CollectiveContext,
  buf: TypedArray,
  op: WasmOp,
): Promise<void> {
  const shared = sharedAccess(ctx, "shm_direct");
  const { rank, size } = ctx;
  if (buf.byteLength <= shared.eagerBytes) {
    reduceSlots(op, buf, shared.eagerExchange(buf, "allreduce"));
    return Promise.resolve();
  }
  const mine = ctx.staged(buf, 2);
  const views = requireViews(shared.exchangeViews(mine, "allreduce"));
  const [s, e] = chunk(buf.length, size, rank);
  const own = mine.subarray(s, e);
  for (let r = 0; r < size; r++) if (r !== rank) reduce(op, own, own, views[r].subarray(s, e));
  shared.barrier();
  for (let r = 0; r < size; r++) {
    if (r === rank) continue;
    const [rs, re] = chunk(buf.length, size, r);
    mine.set(views[r].subarray(rs, re), rs);
  }
  shared.barrier();
  if (mine !== buf) buf.set(mine);
  return Promise.resolve();
}
