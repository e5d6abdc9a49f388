/**
 * What the collectives with per-rank counts share (MPI's v collectives): counts and displacements
 * as callers give them (typed arrays or plain arrays), checked into a rank's blocks — one count a
 * rank, each an integer ≥ 0, each block inside its operand, an output's blocks apart — with
 * displacements packed in rank order when none are given; and the check that two ranks agree on a
 * block's count.
 * @module
 */

import type { CollectiveContext } from "./context.ts";
import { dtypeOf, type TypedArray } from "../types.ts";
import { MismatchError } from "../errors.ts";

/** Counts or displacements, one per rank: a typed array or a plain array of integers. */
export type Counts = ArrayLike<number>;

/** Blocks of one operand: block r is `counts[r]` elements from `displs[r]`. */
export interface Blocks {
  counts: number[];
  displs: number[];
}

/**
 * `counts` (and `displs`, packed in rank order when absent) of operand `name` of a call that does
 * `what` on `size` ranks, checked against its `length`: a RangeError naming the first bad entry.
 * The blocks of an operand the call writes (`written`) must not overlap.
 */
export function blocksOf(
  what: string,
  name: string,
  length: number,
  size: number,
  counts: Counts | undefined,
  displs: Counts | undefined,
  written: boolean,
): Blocks {
  // Labels are spelled only for an error: this check runs on every call.
  const list = (suffix: string, given: Counts | undefined): number[] | undefined => {
    if (given === undefined) return undefined;
    if (typeof given !== "object" || given === null || typeof given.length !== "number") {
      throw new TypeError(`Cannot ${what}: ${name}${suffix} must be an array of ${size} integers`);
    }
    if (given.length !== size) {
      throw new RangeError(
        `Cannot ${what}: ${name}${suffix} has ${given.length} entries; expected ${size}, ` +
          "one per rank",
      );
    }
    const out = new Array<number>(size);
    for (let r = 0; r < size; r++) {
      const v = Number(given[r]);
      if (!Number.isSafeInteger(v) || v < 0) {
        throw new RangeError(
          `Cannot ${what}: ${name}${suffix}[${r}] = ${given[r]} is not accepted; expected an ` +
            `integer ≥ 0`,
        );
      }
      out[r] = v;
    }
    return out;
  };
  const c = list("Counts", counts);
  if (c === undefined) throw new TypeError(`Cannot ${what} without ${name}Counts`);
  const given = list("Displs", displs);
  const d = given ?? packed(c);
  for (let r = 0; r < size; r++) {
    if (d[r] + c[r] > length) {
      throw new RangeError(
        `Cannot ${what}: block ${r} of ${name} (${name}Counts[${r}] = ${c[r]} from ` +
          `${name}Displs[${r}] = ${d[r]}) ends at ${d[r] + c[r]}, past its ${length} elements`,
      );
    }
  }
  // Packed blocks are apart by construction: only given displacements can overlap.
  if (written && given && !inRankOrder(c, d)) {
    const order = [...c.keys()].filter((r) => c[r] > 0).sort((a, b) => d[a] - d[b]);
    for (let k = 1; k < order.length; k++) {
      const [p, q] = [order[k - 1], order[k]];
      if (d[p] + c[p] > d[q]) {
        throw new RangeError(
          `Cannot ${what}: blocks ${p} and ${q} of ${name} overlap (elements ${d[q]} to ` +
            `${Math.min(d[p] + c[p], d[q] + c[q]) - 1}); a written buffer's blocks must be apart`,
        );
      }
    }
  }
  return { counts: c, displs: d };
}

/** Whether the non-empty blocks follow each other in rank order without overlapping (the common case). */
function inRankOrder(counts: readonly number[], displs: readonly number[]): boolean {
  let end = 0;
  for (let r = 0; r < counts.length; r++) {
    if (counts[r] === 0) continue;
    if (displs[r] < end) return false;
    end = displs[r] + counts[r];
  }
  return true;
}

/** Displacements of blocks of `counts` packed in rank order. */
export function packed(counts: readonly number[]): number[] {
  const displs: number[] = [];
  let at = 0;
  for (const c of counts) {
    displs.push(at);
    at += c;
  }
  return displs;
}

/** Sum of `counts`. */
export function total(counts: readonly number[]): number {
  return counts.reduce((s, c) => s + c, 0);
}

/** Block `r` of `view` by `counts` and `displs`. */
export function blockOf(
  view: TypedArray,
  counts: readonly number[],
  displs: readonly number[],
  r: number,
): TypedArray {
  return view.subarray(displs[r], displs[r] + counts[r]);
}

/**
 * `send` as it was when the call began, where the call's output is its input (in place): the
 * blocks are read from a copy in scratch, since the output overwrites them as they arrive.
 */
export function inputOf(ctx: CollectiveContext, send: TypedArray, recv: TypedArray): TypedArray {
  if (send !== recv && !(send.buffer === recv.buffer && send.byteOffset === recv.byteOffset)) {
    return send;
  }
  const copy = ctx.scratch(dtypeOf(send), send.length, 1);
  copy.set(send);
  return copy;
}

/**
 * Throws unless rank `rank` expects as many elements from rank `peer` as `peer` sends it: a
 * MismatchError naming both (the direct algorithms, which see both sides' counts).
 */
export function requireAgreed(
  collective: string,
  rank: number,
  expected: number,
  peer: number,
  sent: number,
): void {
  if (expected === sent) return;
  throw new MismatchError(
    `Rank ${rank} called ${collective} expecting ${expected} elements from rank ${peer}, but ` +
      `rank ${peer} sends it ${sent}`,
    { failedRank: rank },
  );
}
