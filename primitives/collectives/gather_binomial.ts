import { dtypeOf, type TypedArray } from "../types.ts";
import { type CollectiveContext, mod } from "./context.ts";
import type { HostAlgorithm } from "./algorithm.ts";

/**
 * Binomial-tree gather: ⌈log2 n⌉ rounds; a rank collects its subtree's blocks (in order of
 * distance from the root) and sends them to its parent in one message, so the root takes
 * ⌈log2 n⌉ messages instead of n − 1 (MPICH's small-message choice; where a copy costs about
 * what a message does, as between ranks of one machine, the linear gather wins: docs/auto.md).
 * The root then puts the blocks in rank order.
 */
export async function gatherBinomial(
  ctx: CollectiveContext,
  send: TypedArray,
  recv: TypedArray,
  root: number,
): Promise<void> {
  const { rank, size } = ctx;
  const n = send.length, vr = mod(rank - root, size);
  // Blocks of this rank's subtree, by distance from the root minus vr.
  const tree = ctx.scratch(dtypeOf(send), size * n, 0);
  tree.set(send);
  let mask = 1;
  for (; mask < size; mask <<= 1) {
    if (vr & mask) break;
    const child = vr + mask;
    if (child < size) {
      const blocks = Math.min(mask, size - child);
      await ctx.recv(mod(child + root, size), tree.subarray(mask * n, (mask + blocks) * n));
    }
  }
  if (vr !== 0) {
    const blocks = Math.min(mask, size - vr);
    return void await ctx.send(mod(vr - mask + root, size), tree.subarray(0, blocks * n));
  }
  for (let v = 0; v < size; v++) {
    const r = mod(v + root, size);
    recv.set(tree.subarray(v * n, (v + 1) * n), r * n);
  }
}

/** gather `binomial` (see {@linkcode gatherBinomial}). */
export const GATHER_BINOMIAL: HostAlgorithm<"gather"> = {
  name: "binomial",
  collective: "gather",
  needs: "messages",
  // Scratch: a subtree's blocks.
  scratch: (count) => count,
  run: gatherBinomial,
};
