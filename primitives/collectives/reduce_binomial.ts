import { dtypeOf, type KernelOp, type TypedArray } from "../types.ts";
import { type CollectiveContext, mod, viaOutput } from "./context.ts";
import type { HostAlgorithm } from "./algorithm.ts";

/**
 * Binomial-tree reduce: the mirror of the binomial broadcast. ⌈log2 n⌉ rounds; a rank receives
 * from its children, reduces, and sends once to its parent. A non-root with children accumulates
 * in scratch so its buffer stays unchanged; a leaf sends its buffer as it is.
 */
export async function reduceBinomial(
  ctx: CollectiveContext,
  buf: TypedArray,
  op: KernelOp,
  root: number,
): Promise<void> {
  const { rank, size } = ctx;
  const vr = mod(rank - root, size);
  let acc = buf;
  for (let mask = 1; mask < size; mask <<= 1) {
    if (vr & mask) {
      await ctx.send(mod(rank - mask, size), acc);
      return;
    }
    if (vr + mask < size) {
      if (acc === buf && rank !== root) {
        acc = ctx.scratch(dtypeOf(buf), buf.length, 2);
        acc.set(buf);
      }
      const tmp = ctx.scratch(dtypeOf(buf), buf.length, 0);
      await ctx.recv(mod(rank + mask, size), tmp);
      ctx.reduceInto(op, acc, tmp);
    }
  }
}

/** reduce `binomial` (see {@linkcode reduceBinomial}). */
export const REDUCE_BINOMIAL: HostAlgorithm<"reduce"> = {
  name: "binomial",
  collective: "reduce",
  needs: "messages",
  // Scratch: a child's buffer and the running sum.
  scratch: (count) => 2 * count,
  run: viaOutput(reduceBinomial),
  // As bcast's tree: ahead of the scatter forms at every size, and of `hierarchical`'s.
  winsBelow: () => Infinity,
  // The root receives and reduces the buffer ⌈log2 p⌉ times.
  cost: (links, { bytes, size }) =>
    Math.ceil(Math.log2(size)) *
    (links.latencyUs + bytes * (links.usPerByte + links.reduceUsPerByte)),
};
