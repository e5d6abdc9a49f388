import type { TypedArray } from "../types.ts";
import { type CollectiveContext, mod, part } from "./context.ts";
import { ringAllgather } from "./_ring.ts";
import type { HostAlgorithm } from "./algorithm.ts";

/**
 * Scatter-allgather broadcast (van de Geijn): the root sends chunk i to the rank i places after
 * it, then a ring allgather completes every copy. The root sends the buffer once instead of
 * log2(n) times, so it wins for large buffers.
 */
export async function bcastScatterAllgather(
  ctx: CollectiveContext,
  buf: TypedArray,
  root: number,
): Promise<void> {
  const { rank, size } = ctx;
  if (size === 1) return;
  // Chunks indexed by real rank; chunk r belongs to rank r.
  const chunks = Array.from({ length: size }, (_, r) => part(buf, size, mod(r - root, size)));
  if (rank === root) {
    await Promise.all(chunks.map((c, r) => (r === root ? Promise.resolve() : ctx.send(r, c))));
  } else {
    await ctx.recv(root, chunks[rank]);
  }
  await ringAllgather(ctx, chunks, 0);
}

/** bcast `scatter_allgather` (see {@linkcode bcastScatterAllgather}). */
export const BCAST_SCATTER_ALLGATHER: HostAlgorithm<"bcast"> = {
  name: "scatter_allgather",
  collective: "bcast",
  needs: "messages",
  run: bcastScatterAllgather,
  // 2(p−1)/p of the buffer in 2(p−1) messages.
  cost: (links, { bytes, size: p }) =>
    2 * (p - 1) * links.latencyUs + 2 * ((p - 1) / p) * bytes * links.usPerByte,
};
