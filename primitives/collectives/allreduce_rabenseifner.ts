import { dtypeOf, type KernelOp, type TypedArray } from "../types.ts";
import { chunk, type CollectiveContext, viaOutput } from "./context.ts";
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
 * Rabenseifner: reduce-scatter by recursive halving, then allgather by recursive doubling, on the
 * power-of-two group left by the fold. 2·log2(p2) steps; each rank sends about 2(p2−1)/p2 of the
 * buffer, so it is bandwidth-optimal with logarithmic latency.
 */
export async function allreduceRabenseifner(
  ctx: CollectiveContext,
  buf: TypedArray,
  op: KernelOp,
): Promise<void> {
  const fold = foldOf(ctx);
  if (fold.paired) await foldIn(ctx, buf, op);
  const { p2, newRank } = fold;
  if (newRank >= 0 && p2 > 1) {
    const range = (lo: number, hi: number) => {
      const s = chunk(buf.length, p2, lo)[0], e = chunk(buf.length, p2, hi - 1)[1];
      return buf.subarray(s, e);
    };
    // Recursive halving: keep the half of the current chunk range that holds chunk `newRank`.
    let lo = 0, hi = p2;
    const steps: { partner: number; lo: number; hi: number }[] = [];
    for (let mask = p2 >> 1; mask >= 1; mask >>= 1) {
      const partner = realRank(fold, newRank ^ mask);
      const mid = (lo + hi) >> 1;
      const [keepLo, keepHi, giveLo, giveHi] = newRank & mask
        ? [mid, hi, lo, mid]
        : [lo, mid, mid, hi];
      const keep = range(keepLo, keepHi);
      const tmp = ctx.scratch(dtypeOf(buf), keep.length, 0);
      await ctx.sendrecv(partner, range(giveLo, giveHi), partner, tmp);
      ctx.reduceInto(op, keep, tmp);
      steps.push({ partner, lo, hi });
      [lo, hi] = [keepLo, keepHi];
    }
    // Recursive doubling allgather: undo the halving steps in reverse.
    for (const step of steps.reverse()) {
      const mid = (step.lo + step.hi) >> 1;
      const other = lo === step.lo ? range(mid, step.hi) : range(step.lo, mid);
      await ctx.sendrecv(step.partner, range(lo, hi), step.partner, other);
      [lo, hi] = [step.lo, step.hi];
    }
  }
  if (fold.paired) await foldOut(ctx, buf);
}

/** allreduce `rabenseifner` (see {@linkcode allreduceRabenseifner}). */
export const ALLREDUCE_RABENSEIFNER: HostAlgorithm<"allreduce"> = {
  name: "rabenseifner",
  collective: "allreduce",
  needs: "messages",
  // Scratch: the half it keeps, and the fold.
  scratch: (count, size) => count / 2 + foldScratch(count, size),
  run: viaOutput(allreduceRabenseifner),
  // It led at 2^18–2^19 floats on 4 ranks; on 2 it is recursive doubling's exchange, and off a
  // power of two its fold costs more than it saves.
  winsBelow: (size) => size > 2 && (size & (size - 1)) === 0 ? 4 * 1024 * 1024 : 0,
  // Halving then doubling: 2 log2 p steps, (p−1)/p of the buffer sent twice and reduced once.
  cost: (links, call) => {
    const p2 = powerOfTwoBelow(call.size);
    return foldUs(links, call) + 2 * Math.log2(p2) * links.latencyUs +
      ((p2 - 1) / p2) * call.bytes * (2 * links.usPerByte + links.reduceUsPerByte);
  },
};
