import { dtypeOf, type KernelOp, type TypedArray } from "../types.ts";
import { type CollectiveContext, viaOutput } from "./context.ts";
import {
  foldIn,
  foldOf,
  foldOut,
  foldScratch,
  foldUs,
  powerOfTwoBelow,
  realRank,
} from "./_fold.ts";
import type { HostAlgorithm } from "./algorithm.ts";

/**
 * Recursive doubling: log2(p2) rounds in which partners `r ^ mask` swap their whole buffer and
 * reduce. Latency-optimal (⌈log2 n⌉ + 2 steps with the fold), but every round moves the whole
 * buffer: n·log2(n) buffers on the wire. Best for small messages.
 */
export async function allreduceRecursiveDoubling(
  ctx: CollectiveContext,
  buf: TypedArray,
  op: KernelOp,
): Promise<void> {
  const fold = foldOf(ctx);
  if (fold.paired) await foldIn(ctx, buf, op);
  if (fold.newRank >= 0) {
    const tmp = ctx.scratch(dtypeOf(buf), buf.length, 0);
    for (let mask = 1; mask < fold.p2; mask <<= 1) {
      const partner = realRank(fold, fold.newRank ^ mask);
      await ctx.sendrecv(partner, buf, partner, tmp);
      ctx.reduceInto(op, buf, tmp);
    }
  }
  if (fold.paired) await foldOut(ctx, buf);
}

/** allreduce `recursive_doubling` (see {@linkcode allreduceRecursiveDoubling}). */
export const ALLREDUCE_RECURSIVE_DOUBLING: HostAlgorithm<"allreduce"> = {
  name: "recursive_doubling",
  collective: "allreduce",
  needs: "messages",
  // Scratch: a peer's whole buffer, and the fold.
  scratch: (count, size) => count + foldScratch(count, size),
  run: viaOutput(allreduceRecursiveDoubling),
  // Over `worker` it led below 2^17 floats at 2 and 4 ranks (docs/auto.md).
  winsBelow: () => 512 * 1024,
  // log2 p rounds, each swapping and reducing the whole buffer.
  cost: (links, call) =>
    foldUs(links, call) +
    Math.log2(powerOfTwoBelow(call.size)) *
      (links.latencyUs + call.bytes * (links.usPerByte + links.reduceUsPerByte)),
};
