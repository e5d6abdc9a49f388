import { dtypeOf, type KernelOp, type TypedArray } from "../types.ts";
import { type CollectiveContext, mod, part, viaOutput } from "./context.ts";
import { ringReduceScatter } from "./_ring.ts";
import type { HostAlgorithm } from "./algorithm.ts";

/**
 * Reduce as ring reduce-scatter then gather to the root (Rabenseifner's reduce): each rank sends
 * (n−1)/n of the buffer in the ring plus its reduced chunk to the root, so the root's links carry
 * about 2× the buffer instead of log2(n)× — the large-buffer choice.
 */
export async function reduceScatterGather(
  ctx: CollectiveContext,
  buf: TypedArray,
  op: KernelOp,
  root: number,
): Promise<void> {
  const { rank, size } = ctx;
  if (size === 1) return;
  let work = buf;
  if (rank !== root) {
    work = ctx.scratch(dtypeOf(buf), buf.length, 2);
    work.set(buf);
  }
  const chunks = Array.from({ length: size }, (_, i) => part(work, size, i));
  await ringReduceScatter(ctx, chunks, op);
  const owned = mod(rank + 1, size);
  if (rank !== root) {
    await ctx.send(root, chunks[owned]);
  } else {
    await Promise.all(
      chunks.map((c, i) => (i === owned ? Promise.resolve() : ctx.recv(mod(i - 1, size), c))),
    );
  }
}

/** reduce `scatter_gather` (see {@linkcode reduceScatterGather}). */
export const REDUCE_SCATTER_GATHER: HostAlgorithm<"reduce"> = {
  name: "scatter_gather",
  collective: "reduce",
  needs: "messages",
  // Scratch: the buffer's copy, and one chunk of a peer's.
  scratch: (count, size) => count + Math.ceil(count / size),
  run: viaOutput(reduceScatterGather),
  // A reduce-scatter ring and a gather: 2(p−1) messages, (p−1)/p of the buffer twice.
  cost: (links, { bytes, size: p }) =>
    2 * (p - 1) * links.latencyUs +
    ((p - 1) / p) * bytes * (2 * links.usPerByte + links.reduceUsPerByte),
};
