import { dtypeOf, type TypedArray } from "../types.ts";
import { type CollectiveContext, mod } from "./context.ts";
import type { HostAlgorithm } from "./algorithm.ts";

/**
 * Binomial-tree scatter: the mirror of the binomial gather. The root orders the blocks by
 * distance from it; each rank receives its subtree's blocks from its parent in one message and
 * hands each child the part for the child's subtree: ⌈log2 n⌉ rounds, ⌈log2 n⌉ messages from the
 * root instead of n − 1.
 */
export async function scatterBinomial(
  ctx: CollectiveContext,
  send: TypedArray,
  recv: TypedArray,
  root: number,
): Promise<void> {
  const { rank, size } = ctx;
  const n = recv.length, vr = mod(rank - root, size);
  const tree = ctx.scratch(dtypeOf(recv), size * n, 0);
  let mask = 1;
  while (mask < size && !(vr & mask)) mask <<= 1;
  if (vr === 0) {
    for (let v = 0; v < size; v++) {
      const r = mod(v + root, size);
      tree.set(send.subarray(r * n, (r + 1) * n), v * n);
    }
  } else {
    const blocks = Math.min(mask, size - vr);
    await ctx.recv(mod(vr - mask + root, size), tree.subarray(0, blocks * n));
  }
  const sends: Promise<void>[] = [];
  for (mask >>= 1; mask > 0; mask >>= 1) {
    const child = vr + mask;
    if (child < size) {
      const blocks = Math.min(mask, size - child);
      sends.push(ctx.send(mod(child + root, size), tree.subarray(mask * n, (mask + blocks) * n)));
    }
  }
  recv.set(tree.subarray(0, n));
  await Promise.all(sends);
}

/** scatter `binomial` (see {@linkcode scatterBinomial}). */
export const SCATTER_BINOMIAL: HostAlgorithm<"scatter"> = {
  name: "binomial",
  collective: "scatter",
  needs: "messages",
  // Scratch: a subtree's blocks.
  scratch: (count) => count,
  run: scatterBinomial,
  // The root's ⌈log2 n⌉ sends beat its n − 1 until the forwarded blocks cost more: it led the
  // linear scatter up to 2K floats over `worker` at 4 ranks.
  winsBelow: () => 8 * 1024,
};
