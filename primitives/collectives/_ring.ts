/**
 * The two ring passes shared by ring allreduce, ring reduce-scatter and ring allgather. Each step
 * moves one chunk to the right neighbour, cut into segments that are all posted at once so the
 * transport pipelines them while earlier segments are being reduced.
 * @module
 */

import { dtypeOf, type KernelOp, type TypedArray } from "../types.ts";
import { type CollectiveContext, mod, segmentsOf } from "./context.ts";

/**
 * Bytes per pipelined segment: an eighth of the chunk, from 512 KiB to 1 MiB. Small segments
 * interleave the two directions with the reduction; past 1 MiB they gain nothing and a frame of
 * the stream transports would cut them (docs/results/2026-11-transports.md, "Algorithms").
 */
export function ringSegmentBytes(chunkBytes: number): number {
  return Math.min(1 << 20, Math.max(1 << 19, chunkBytes / 8));
}

function segments(view: TypedArray): TypedArray[] {
  return segmentsOf(view, ringSegmentBytes(view.byteLength));
}

/**
 * Ring reduce-scatter over `chunks` (one per rank, in rank order, views of the caller's data).
 * Afterwards chunk `(rank + 1) mod size` holds the full reduction: size − 1 steps, each sending
 * one chunk; (n−1)/n of the buffer leaves every rank. Out of place, `from` holds the input's
 * chunks: each chunk is read from there until this rank has reduced into it, so the input is never
 * copied (chunk `rank` of `chunks` is left unwritten).
 */
export async function ringReduceScatter(
  ctx: CollectiveContext,
  chunks: TypedArray[],
  op: KernelOp,
  from: TypedArray[] = chunks,
): Promise<void> {
  const { rank, size } = ctx;
  const right = mod(rank + 1, size), left = mod(rank - 1, size);
  for (let step = 0; step < size - 1; step++) {
    const out = (step === 0 ? from : chunks)[mod(rank - step, size)];
    const i = mod(rank - step - 1, size);
    const tmp = ctx.scratch(dtypeOf(chunks[i]), chunks[i].length, 0);
    const sends = segments(out).map((s) => ctx.send(right, s));
    const dst = segments(chunks[i]), mine = segments(from[i]), theirs = segments(tmp);
    const recvs = theirs.map((s) => ctx.recv(left, s));
    for (let k = 0; k < dst.length; k++) {
      await recvs[k];
      ctx.reduce(op, dst[k], mine[k], theirs[k]);
    }
    await Promise.all(sends);
  }
}

/**
 * Ring allgather over `chunks`, where chunk `(rank + shift) mod size` is complete on entry
 * (`shift` 1 after {@linkcode ringReduceScatter}, 0 for a plain allgather).
 */
export async function ringAllgather(
  ctx: CollectiveContext,
  chunks: TypedArray[],
  shift: number,
): Promise<void> {
  const { rank, size } = ctx;
  const right = mod(rank + 1, size), left = mod(rank - 1, size);
  for (let step = 0; step < size - 1; step++) {
    const out = chunks[mod(rank + shift - step, size)];
    const into = chunks[mod(rank + shift - step - 1, size)];
    const sends = segments(out).map((s) => ctx.send(right, s));
    await Promise.all([...sends, ...segments(into).map((s) => ctx.recv(left, s))]);
  }
}
