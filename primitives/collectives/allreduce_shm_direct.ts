import { reduce } from "../../kernels/reduce.ts";
import type { WasmOp } from "../../kernels/reduce_wat.ts";
import { dtypeOf, type TypedArray } from "../types.ts";
import { chunk, type CollectiveContext } from "./context.ts";
import { reduceSlots, requireViews, sharedAccess } from "./shm_direct.ts";

/** Block of a chunk reduced and then written to the peers while it is in cache. */
const BLOCK_BYTES = 128 * 1024;

/**
 * Direct shared-memory allreduce (`shm` only). Small buffers: every rank copies its data into its
 * eager slot, one arrival flag per rank, then every rank reduces all slots in rank order — one
 * handoff. Large buffers: ranks publish their heap buffers; rank r reduces chunk r by reading
 * every rank's chunk r in place and writes the result into chunk r of every rank's buffer, block
 * by block — 2 barriers, each byte read once and written once, no messages.
 */
export function allreduceShmDirect(
  ctx: CollectiveContext,
  buf: TypedArray,
  op: WasmOp,
): void {
  const shared = sharedAccess(ctx, "shm_direct");
  const { rank, size } = ctx;
  if (buf.byteLength <= shared.eagerBytes) {
    reduceSlots(op, buf, shared.eagerExchange(buf, "allreduce"));
    return;
  }
  // `host` buffers go through a heap bounce buffer. Peers read every chunk but this rank's own,
  // so only those are staged up front; the own chunk is staged and copied back block by block.
  const host = !ctx.heap.owns(buf);
  const mine = host ? ctx.scratch(dtypeOf(buf), buf.length, 2) : buf;
  const [s, e] = chunk(buf.length, size, rank);
  if (host) copyOutside(mine, buf, s, e);
  const views = requireViews(shared.exchangeViews(mine, "allreduce"));
  // Only this rank touches chunk `rank` of any buffer, so it can write each reduced block into
  // every peer's buffer at once, while the block is still in cache.
  const block = BLOCK_BYTES / buf.BYTES_PER_ELEMENT;
  for (let b = s; b < e; b += block) {
    const be = Math.min(e, b + block);
    const own = mine.subarray(b, be);
    if (host) own.set(buf.subarray(b, be));
    for (let r = 0; r < size; r++) if (r !== rank) reduce(op, own, own, views[r].subarray(b, be));
    for (let r = 0; r < size; r++) if (r !== rank) views[r].set(own, b);
    if (host) buf.set(own, b);
  }
  shared.barrier();
  if (host) copyOutside(buf, mine, s, e);
}

/** Copies `src` into `dst` except for elements `[s, e)`. */
function copyOutside(dst: TypedArray, src: TypedArray, s: number, e: number): void {
  dst.set(src.subarray(0, s));
  dst.set(src.subarray(e), e);
}
