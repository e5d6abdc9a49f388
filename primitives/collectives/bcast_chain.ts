import type { TypedArray } from "../types.ts";
import { chainSegmentCount, chainSegments } from "./_chain.ts";
import { type CollectiveContext, mod } from "./context.ts";
import type { HostAlgorithm } from "./algorithm.ts";

/**
 * Chain (pipelined) broadcast: the ranks form a line from the root, and each passes every segment
 * on to the next as soon as it has it. n − 1 + S − 1 segment steps for S segments; every link
 * carries the buffer once, so a large buffer arrives at nearly the link's rate however many
 * ranks there are (a binomial tree sends it ⌈log2 n⌉ times from the root).
 */
export async function bcastChain(
  ctx: CollectiveContext,
  buf: TypedArray,
  root: number,
): Promise<void> {
  const { rank, size } = ctx;
  if (size === 1) return;
  const vr = mod(rank - root, size);
  const prev = mod(rank - 1, size), next = mod(rank + 1, size);
  const sends: Promise<void>[] = [];
  for (const segment of chainSegments(buf)) {
    if (vr > 0) await ctx.recv(prev, segment);
    if (vr < size - 1) sends.push(ctx.send(next, segment));
  }
  await Promise.all(sends);
}

/** bcast `chain` (see {@linkcode bcastChain}). */
export const BCAST_CHAIN: HostAlgorithm<"bcast"> = {
  name: "chain",
  collective: "bcast",
  needs: "messages",
  run: bcastChain,
  // Every rank sends the buffer once, a message per segment.
  cost: (links, { bytes }) => chainSegmentCount(bytes) * links.latencyUs + bytes * links.usPerByte,
};
