import { dtypeOf, type KernelOp, type TypedArray } from "../types.ts";
import { chainSegmentCount, chainSegments } from "./_chain.ts";
import { type CollectiveContext, mod, viaOutput } from "./context.ts";
import type { HostAlgorithm } from "./algorithm.ts";

/**
 * Chain (pipelined) reduce: the mirror of the chain broadcast. The ranks form a line ending at the
 * root; each receives a segment's partial result from the rank before it, adds its own and passes
 * it on, segment by segment, so every link carries the buffer once. Non-roots reduce into scratch
 * and leave their buffers unchanged.
 */
export async function reduceChain(
  ctx: CollectiveContext,
  buf: TypedArray,
  op: KernelOp,
  root: number,
): Promise<void> {
  const { rank, size } = ctx;
  if (size === 1) return;
  const vr = mod(rank - root, size);
  const from = mod(rank + 1, size), to = mod(rank - 1, size);
  const mine = chainSegments(buf);
  // The chain starts at the rank furthest from the root, which sends its own data as it is.
  const theirs = vr === size - 1 ? [] : chainSegments(ctx.scratch(dtypeOf(buf), buf.length, 0));
  const sends: Promise<void>[] = [];
  for (let k = 0; k < mine.length; k++) {
    if (vr === size - 1) {
      sends.push(ctx.send(to, mine[k]));
      continue;
    }
    await ctx.recv(from, theirs[k]);
    if (vr === 0) {
      ctx.reduceInto(op, mine[k], theirs[k]);
    } else {
      ctx.reduceInto(op, theirs[k], mine[k]);
      sends.push(ctx.send(to, theirs[k]));
    }
  }
  await Promise.all(sends);
}

/** reduce `chain` (see {@linkcode reduceChain}). */
export const REDUCE_CHAIN: HostAlgorithm<"reduce"> = {
  name: "chain",
  collective: "reduce",
  needs: "messages",
  // Scratch: the previous rank's buffer.
  scratch: (count) => count,
  run: viaOutput(reduceChain),
  // Every rank receives, reduces and passes on the buffer once, a message per segment.
  cost: (links, { bytes }) =>
    chainSegmentCount(bytes) * links.latencyUs +
    bytes * (links.usPerByte + links.reduceUsPerByte),
};
