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

/** `traffic` (balanced when absent) over `size` ranks scaled to `size × count` elements. */
export function trafficAt(traffic: Traffic | undefined, size: number, count: number): TrafficAt {
  const weights = traffic?.weights ?? Array.from({ length: size }, () => new Array(size).fill(1));
  const sum = weights.flat().reduce((s, w) => s + w, 0);
  const totalCount = size * count;
  // Largest remainder: the floors, then one more to the cells that lost the most to rounding.
  const exact = weights.map((row) => row.map((w) => (w / sum) * totalCount));
  const counts = exact.map((row) => row.map(Math.floor));
  let missing = totalCount - counts.flat().reduce((s, c) => s + c, 0);
  const cells = exact.flatMap((row, i) => row.map((x, j) => ({ i, j, left: x - Math.floor(x) })))
    .sort((a, b) => b.left - a.left || a.i - b.i || a.j - b.j);
  for (const { i, j } of cells) {
    if (missing-- <= 0) break;
    counts[i][j]++;
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
