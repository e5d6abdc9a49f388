import { copy } from "../../kernels/copy.ts";
import { reduce } from "../../kernels/reduce.ts";
import { dtypeOf, type KernelOp, type TypedArray } from "../types.ts";
import { chunk, type CollectiveContext } from "./context.ts";
import { reduceSlots, requireViews, sharedAccess } from "./_shm_direct.ts";
import type { HostAlgorithm } from "./algorithm.ts";

/** Block of a chunk reduced and then written to the peers while it is in cache. */
const BLOCK_BYTES = 128 * 1024;

/**
 * Direct shared-memory allreduce (`shm` only). Small buffers: every rank copies its input into its
 * eager slot, one arrival flag per rank, then every rank reduces all slots in rank order — one
 * handoff. Large buffers: ranks publish their heap buffers; rank r reduces chunk r by reading
 * every rank's input chunk r in place and writes the result into chunk r of every rank's output,
 * block by block — each byte read once and written once, no messages, no copy out of place.
 */
export function allreduceShmDirect(
  ctx: CollectiveContext,
  input: TypedArray,
  output: TypedArray,
  op: KernelOp,
): void {
  const shared = sharedAccess(ctx, "shm_direct");
  const { rank, size } = ctx;
  if (input.byteLength <= shared.eagerBytes) {
    reduceSlots(op, output, shared.eagerExchange(input, ctx.stamp));
    return;
  }
  // Peers read this rank's `sources` view and write its `targets` view: input and output when
  // both live in the heap. Otherwise (`host` memory) one heap bounce buffer is both; peers read
  // every chunk of it but this rank's own, so only those are staged up front, the own chunk block
  // by block.
  const direct = ctx.heap.owns(input) && ctx.heap.owns(output);
  const bounce = direct ? undefined : ctx.scratch(dtypeOf(input), input.length, 2);
  const [s, e] = chunk(input.length, size, rank);
  if (bounce) copyOutside(bounce, input, s, e);
  const sources = requireViews(shared.exchangeViews(bounce ?? input, ctx.stamp));
  const targets = requireViews(shared.exchangeViews(bounce ?? output, ctx.stamp));
  // Only this rank touches chunk `rank` of any buffer, so it can write each reduced block into
  // every peer's output at once, while the block is still in cache.
  const block = BLOCK_BYTES / input.BYTES_PER_ELEMENT;
  for (let b = s; b < e; b += block) {
    const be = Math.min(e, b + block);
    const own = targets[rank].subarray(b, be);
    if (bounce) copy(own, input, 0, b, be - b); // the kernel needs its first operand in a heap
    let first = bounce ? own : sources[rank].subarray(b, be);
    for (let r = 0; r < size; r++) {
      if (r === rank) continue;
      reduce(op, own, first, sources[r].subarray(b, be));
      first = own;
    }
    for (let r = 0; r < size; r++) if (r !== rank) copy(targets[r], own, b);
    if (bounce) copy(output, own, b);
  }
  shared.barrier(ctx.stamp);
  if (bounce) copyOutside(output, bounce, s, e);
}

/** Copies `src` into `dst` except for elements `[s, e)`. */
function copyOutside(dst: TypedArray, src: TypedArray, s: number, e: number): void {
  copy(dst, src, 0, 0, s);
  copy(dst, src, e, e);
}

/** allreduce `shm_direct` (see {@linkcode allreduceShmDirect}). */
export const ALLREDUCE_SHM_DIRECT: HostAlgorithm<"allreduce"> = {
  name: "shm_direct",
  collective: "allreduce",
  needs: "shared",
  run: allreduceShmDirect,
  // Direct access moves each byte across memory once: ahead of every other at every size.
  winsBelow: () => Infinity,
};
