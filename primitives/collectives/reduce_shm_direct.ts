import { reduce } from "../../kernels/reduce.ts";
import { dtypeOf, type KernelOp, type TypedArray } from "../types.ts";
import { chunk, type CollectiveContext } from "./context.ts";
import { reduceSlots, requireViews, sharedAccess } from "./_shm_direct.ts";
import type { HostAlgorithm } from "./algorithm.ts";

/**
 * Direct shared-memory reduce (`shm` only): rank r reduces chunk r of every rank's input straight
 * into the root's output, so all ranks share the work, nothing is copied first, and non-roots'
 * buffers stay untouched. Small buffers go through the eager slots and the root reduces them in
 * rank order; the smallest are pipelined: non-roots leave their data in a slot and return at once.
 */
export function reduceShmDirect(
  ctx: CollectiveContext,
  input: TypedArray,
  output: TypedArray,
  op: KernelOp,
  root: number,
): void {
  const shared = sharedAccess(ctx, "shm_direct");
  const { rank, size } = ctx;
  if (input.byteLength <= shared.pipeBytes) {
    shared.pipeBegin(ctx.stamp);
    if (rank !== root) return shared.pipeWrite(input, root);
    // Root first, then the others in rank order: a fixed order, so the bits are deterministic.
    let first = input;
    for (let r = 0; r < size; r++) {
      if (r === root) continue;
      reduce(op, output, first, shared.pipeRead(r, input));
      first = output;
    }
    return shared.pipeEnd();
  }
  if (input.byteLength <= shared.eagerBytes) {
    const slots = shared.eagerExchange(input, ctx.stamp);
    if (rank === root) reduceSlots(op, output, slots);
    return;
  }
  // Peers read every rank's input and write the root's output, so both must be in heaps: a
  // `host` output is replaced by a heap bounce buffer, which the root copies out at the end.
  const sources = requireViews(shared.exchangeViews(ctx.staged(input, 2), ctx.stamp));
  const bounce = rank === root && !ctx.heap.owns(output)
    ? ctx.scratch(dtypeOf(output), output.length, 3)
    : undefined;
  const target = shared.exchangeViews(bounce ?? output, ctx.stamp)[root];
  if (!target) throw new Error("Internal error: the root's output is not in its heap");
  const [s, e] = chunk(input.length, size, rank);
  const dst = target.subarray(s, e);
  // The same order as the small path: the root's chunk first, then the others in rank order.
  let first = sources[root].subarray(s, e);
  for (let r = 0; r < size; r++) {
    if (r === root) continue;
    reduce(op, dst, first, sources[r].subarray(s, e));
    first = dst;
  }
  shared.barrier(ctx.stamp);
  if (bounce) output.set(bounce);
}

/** reduce `shm_direct` (see {@linkcode reduceShmDirect}). */
export const REDUCE_SHM_DIRECT: HostAlgorithm<"reduce"> = {
  name: "shm_direct",
  collective: "reduce",
  needs: "shared",
  run: reduceShmDirect,
  // Direct access moves each byte across memory once: ahead of every other at every size.
  winsBelow: () => Infinity,
};
