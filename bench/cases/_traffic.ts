/**
 * An alltoallv's traffic at one size: the weights of a matrix file or a generator scaled to the
 * balanced run's total (size × count elements), rounded so the total is exact (largest
 * remainder), every rank's blocks and displacements, and what the busiest rank moves.
 * @module
 */

import { packed } from "../../internal.ts";
import type { Traffic } from "./spec.ts";

/** Every rank's counts to every rank at one size: `counts[i][j]` elements from i to j. */
export interface TrafficAt {
  counts: number[][];
  /** Where each of rank i's blocks starts in its `send` (packed in rank order). */
  sendDispls: number[][];
  /** Where each of rank j's blocks starts in its `recv` (packed in rank order). */
  recvDispls: number[][];
  /** Elements the busiest rank sends or receives. */
  busiest: number;
}

/**
 * `traffic` (balanced when absent) over `size` ranks scaled to `size × count` elements. The
 * answer is shared, not to be changed: a simulated group's ranks, in one process, ask for the
 * same matrix (N² cells) each, at every size.
 */
export function trafficAt(traffic: Traffic | undefined, size: number, count: number): TrafficAt {
  const key = `${size} ${count}`;
  let kept = traffic ? scaled.get(traffic) : balancedKept;
  if (!kept) scaled.set(traffic!, kept = new Map());
  let at = kept.get(key);
  if (!at) {
    at = scale(traffic?.weights ?? balancedWeights(size), size * count);
    if (kept.size >= KEPT_SIZES) kept.delete(kept.keys().next().value!);
    kept.set(key, at);
  }
  return at;
}

/** Sizes a traffic keeps scaled: a sweep's ranks are a size apart at most. */
const KEPT_SIZES = 4;
const scaled = new WeakMap<Traffic, Map<string, TrafficAt>>();
const balancedKept = new Map<string, TrafficAt>();

function balancedWeights(size: number): number[][] {
  return Array.from({ length: size }, () => new Array(size).fill(1));
}

/**
 * `weights` scaled to `total` elements by largest remainder: the floors, then one more to the
 * cells that lost the most to rounding, ties in row-major order.
 */
function scale(weights: number[][], total: number): TrafficAt {
  const size = weights.length, cells = size * size;
  let sum = 0;
  for (const row of weights) for (const w of row) sum += w;
  const left = new Float64Array(cells);
  let missing = total;
  const counts = weights.map((row, i) =>
    row.map((w, j) => {
      const exact = (w / sum) * total, floor = Math.floor(exact);
      left[i * size + j] = exact - floor;
      missing -= floor;
      return floor;
    })
  );
  if (missing > 0) {
    // The `missing` largest remainders are those above the missing-th largest, t, and the first
    // cells at t: a typed sort of the remainders finds t without ordering N² cells by hand.
    const t = Float64Array.from(left).sort()[cells - Math.min(missing, cells)];
    let ties = missing;
    for (const r of left) if (r > t) ties--;
    for (let k = 0; k < cells && missing > 0; k++) {
      if (left[k] > t || (left[k] === t && ties-- > 0)) {
        counts[Math.floor(k / size)][k % size]++;
        missing--;
      }
    }
  }
  const column = (j: number) => counts.map((row) => row[j]);
  const sent = counts.map((row) => row.reduce((s, c) => s + c, 0));
  const received = counts.map((_, j) => column(j).reduce((s, c) => s + c, 0));
  return {
    counts,
    sendDispls: counts.map(packed),
    recvDispls: counts.map((_, j) => packed(column(j))),
    busiest: Math.max(...sent, ...received),
  };
}

/**
 * Zipf traffic, as mixture-of-experts routing makes it: rank j receives in proportion to
 * 1 / k^s, k its place in a popularity order drawn with `seed`, from every rank alike.
 */
export function zipfTraffic(size: number, s: number, seed: number): Traffic {
  const order = shuffled(size, seed);
  const weight = Array.from({ length: size }, (_, j) => 1 / (order[j] + 1) ** s);
  return {
    label: `zipf:${s} seed ${seed}`,
    weights: Array.from({ length: size }, () => [...weight]),
  };
}

/** 0 … n − 1 in an order drawn from `seed` (Fisher–Yates over a 32-bit LCG). */
function shuffled(n: number, seed: number): number[] {
  const order = Array.from({ length: n }, (_, i) => i);
  let state = (seed * 2654435761 + 1) >>> 0;
  for (let i = n - 1; i > 0; i--) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    const j = state % (i + 1);
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order;
}
