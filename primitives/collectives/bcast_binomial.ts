import type { TypedArray } from "../types.ts";
import { type CollectiveContext, mod } from "./context.ts";
import type { HostAlgorithm } from "./algorithm.ts";

/**
 * Binomial-tree broadcast: ⌈log2 n⌉ rounds; in round k the 2^k ranks that have the data send it
 * to one new rank each. Every non-root receives the buffer once; the root sends it ⌈log2 n⌉ times.
 */
export async function bcastBinomial(
  ctx: CollectiveContext,
  buf: TypedArray,
  root: number,
): Promise<void> {
  const { rank, size } = ctx;
  const vr = mod(rank - root, size);
  let mask = 1;
  while (mask < size) {
    if (vr & mask) {
      await ctx.recv(mod(rank - mask, size), buf);
      break;
    }
    mask <<= 1;
  }
  const sends: Promise<void>[] = [];
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (vr + mask < size) sends.push(ctx.send(mod(rank + mask, size), buf));
  }
  await Promise.all(sends);
}

/** bcast `binomial` (see {@linkcode bcastBinomial}). */
export const BCAST_BINOMIAL: HostAlgorithm<"bcast"> = {
  name: "binomial",
  collective: "bcast",
  needs: "messages",
  run: bcastBinomial,
  // It beat the scatter forms at every size on one machine, and in a hierarchical group too:
  // ranks are numbered host by host, so the tree crosses each host's link once per call.
  winsBelow: () => Infinity,
  // Calls in a row overlap: the root's ⌈log2 p⌉ sends of the buffer set the pace.
  cost: (links, { bytes, size }) =>
    Math.ceil(Math.log2(size)) * (links.latencyUs + bytes * links.usPerByte),
};
