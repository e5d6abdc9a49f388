/**
 * The exact inputs every primitive is checked with (nccl-tests style): integer-valued, unique per
 * rank and index, small enough that any sum over the group is exact in its dtype whatever order
 * an algorithm adds in; how buffers of any memory kind are filled with them, and how their results
 * are counted wrong against the exact values.
 * @module
 */

import { type CommBuffer, type Dtype, HostBuffer, type ReduceOp } from "../core.ts";
import { DTYPE_INFO, dtypeOf, type TypedArray } from "../internal.ts";
import { fromStored, reproducibleSum, toStored } from "../kernels/mod.ts";

/** Integers up to 2^bits are exact in each dtype (f64 and i32 are held to f32's). */
const EXACT_BITS: Record<Dtype, number> = { f32: 24, f64: 24, i32: 24, f16: 11, bf16: 8 };

/**
 * Inputs of a `size`-rank group cycle through this many integers, centred on 0: 2^20 for f32 up
 * to 32 ranks, fewer above and for half precision (f16: 512 at 8 ranks, bf16: 64), so that every
 * partial sum over the group is an integer the dtype holds exactly (size × modulus / 2 ≤
 * 2^bits), whatever order an algorithm adds in. Never below 2 (inputs 0 and −1).
 */
export function inputModulus(size: number, dtype: Dtype = "f32"): number {
  let m = 2 ** 20;
  while (m > 2 && size * m > 2 ** (EXACT_BITS[dtype] + 1)) m /= 2;
  return m;
}

/**
 * Input element i of rank r: integer-valued, unique per (rank, index) for i·size + r below
 * {@linkcode inputModulus}, and small enough that any sum over the group is exact in f32.
 * `prod` inputs are ±1 and 2 so products stay exact too (i32 products wrap, exactly, as the
 * kernels' do; f16 products past 65504 are infinite whatever the order).
 */
export function inputValue(
  op: ReduceOp,
  rank: number,
  size: number,
  i: number,
  dtype: Dtype = "f32",
): number {
  if (op === "prod") return [1, -1, 2][(i + 2 * rank) % 3];
  const m = inputModulus(size, dtype);
  return ((i * size + rank) % m) - m / 2;
}

/** The exact reduction over all ranks of element i, rounded as the dtype stores it (a number). */
export function expectedReduction(
  op: ReduceOp,
  dtype: Dtype,
  size: number,
  value: (rank: number) => number,
): number {
  let acc = value(0);
  for (let r = 1; r < size; r++) {
    const v = value(r);
    acc = op === "prod"
      ? (dtype === "i32" ? Math.imul(acc, v) : acc * v)
      : op === "max"
      ? Math.max(acc, v)
      : op === "min"
      ? Math.min(acc, v)
      : acc + v;
  }
  return op === "avg" ? average(acc, size, dtype) : acc;
}

function average(sum: number, size: number, dtype: Dtype): number {
  return dtype === "i32" ? Math.trunc(sum / size) : fromStored(dtype, toStored(dtype, sum / size));
}

/**
 * Inputs repeat along the index, and so do results: `(i·size + r) mod m` with period
 * m / gcd(size, m) (m the power of two {@linkcode inputModulus}), `prod` inputs every 3. Filling
 * and checking work on one period.
 */
function period(op: ReduceOp, size: number, dtype: Dtype): number {
  if (op === "prod") return 3;
  let p = inputModulus(size, dtype);
  while (size % 2 === 0 && p > 1) {
    size /= 2;
    p /= 2;
  }
  return p;
}

/** The first `min(length, period)` values of `value(i)`, as `dtype` stores them. */
function onePeriod(
  dtype: Dtype,
  length: number,
  period: number,
  value: (i: number) => number,
): TypedArray {
  const out = new DTYPE_INFO[dtype].array(Math.min(length, period));
  for (let i = 0; i < out.length; i++) out[i] = toStored(dtype, value(i));
  return out;
}

/** Writes rank `rank`'s inputs into `view`. */
export function fillInput(view: TypedArray, op: ReduceOp, rank: number, size: number): void {
  const dtype = dtypeOf(view);
  const one = onePeriod(
    dtype,
    view.length,
    period(op, size, dtype),
    (i) => inputValue(op, rank, size, i, dtype),
  );
  writePeriodicView(view, one);
}

/** `one` (a period) repeated along `view`: whole periods, doubling, at memcpy speed. */
function writePeriodicView(view: TypedArray, one: TypedArray): void {
  view.set(one);
  for (let filled = one.length; filled < view.length; filled *= 2) {
    view.copyWithin(filled, 0, Math.min(filled, view.length - filled));
  }
}

/** `one` (a period) repeated along `buf`, through its `write` unless it is in host memory. */
async function writePeriodic(buf: CommBuffer, one: TypedArray): Promise<void> {
  if (buf instanceof HostBuffer) return writePeriodicView(buf.view, one);
  for (let at = 0; at < buf.length; at += one.length) {
    await buf.write(one.subarray(0, Math.min(one.length, buf.length - at)), at);
  }
}

/** Elements of `view` that differ from `expected` repeated along it, from element `start` on. */
function countWrong(view: TypedArray, expected: TypedArray, phase = 0): number {
  let wrong = 0;
  for (let i = 0, k = phase; i < view.length; i++, k = k + 1 === expected.length ? 0 : k + 1) {
    // Bit for bit: a zero of the other sign is wrong too.
    if (view[i] !== expected[k] || (view[i] === 0 && 1 / view[i] !== 1 / expected[k])) wrong++;
  }
  return wrong;
}

/** Elements read from a device buffer per piece when checking it. */
const CHECK_PIECE = 1 << 22;

/** Elements of `buf` that differ from `expected` repeated along it. */
async function countWrongIn(buf: CommBuffer, expected: TypedArray): Promise<number> {
  if (buf instanceof HostBuffer) return countWrong(buf.view, expected);
  const piece = new DTYPE_INFO[buf.dtype].array(Math.min(buf.length, CHECK_PIECE));
  let wrong = 0;
  for (let at = 0; at < buf.length; at += piece.length) {
    const part = piece.subarray(0, Math.min(piece.length, buf.length - at));
    await buf.read(part, at);
    wrong += countWrong(part, expected, at % expected.length);
  }
  return wrong;
}

/** Zeros in `buf` (so stale results show). */
export function clear(buf: CommBuffer): Promise<void> {
  if (buf instanceof HostBuffer) return Promise.resolve(void buf.view.fill(0));
  return writePeriodic(buf, new DTYPE_INFO[buf.dtype].array(Math.min(buf.length, 1 << 20)));
}

/**
 * What a run's inputs are: the op's exact integers, or, for a reproducible sum, inexact terms of
 * many exponents (any other order of adding them would round differently), each result held to
 * the library's reproducible sum of every rank's terms bit for bit.
 */
export interface Inputs {
  op: ReduceOp;
  reproducible?: boolean;
}

/** A reproducible run's inputs repeat every this many elements. */
const REPRODUCIBLE_PERIOD = 1024;

/**
 * Input element i of rank r of a reproducible run: ±(1 + a 16-bit fraction) · 2^e, e from −20
 * to 20 (−8 to 8 in half precision), from a hash of (r, i mod the period), as `dtype` holds it.
 */
export function reproducibleInput(rank: number, i: number, dtype: Dtype): number {
  let h = Math.imul((i % REPRODUCIBLE_PERIOD) + 1, 0x9e3779b1) ^ Math.imul(rank + 1, 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d);
  h ^= h >>> 12;
  const spread = DTYPE_INFO[dtype].bytes === 2 ? 8 : 20;
  const e = ((h >>> 16) % (2 * spread + 1)) - spread;
  const x = (h < 0 ? -1 : 1) * (1 + (h & 0xffff) / 65536) * 2 ** e;
  return fromStored(dtype, toStored(dtype, x));
}

/** Input element i of rank `rank`, as `inputs` makes them. */
function inputOf(inputs: Inputs, rank: number, size: number, i: number, dtype: Dtype): number {
  return inputs.reproducible
    ? reproducibleInput(rank, i, dtype)
    : inputValue(inputs.op, rank, size, i, dtype);
}

/** How often `inputs` repeat along the index. */
function periodOf(inputs: Inputs, size: number, dtype: Dtype): number {
  return inputs.reproducible ? REPRODUCIBLE_PERIOD : period(inputs.op, size, dtype);
}

/** Writes rank `rank`'s inputs into `buf`. */
export function writeInput(
  buf: CommBuffer,
  inputs: Inputs,
  rank: number,
  size: number,
): Promise<void> {
  const value = (i: number) => inputOf(inputs, rank, size, i, buf.dtype);
  return writePeriodic(
    buf,
    onePeriod(buf.dtype, buf.length, periodOf(inputs, size, buf.dtype), value),
  );
}

/**
 * The usual set-up: zeros in `recv` (so stale results show), then this rank's inputs in `send`
 * (in that order, so a `send` that is a window of `recv`, in place, keeps them).
 */
export async function clearRecvFillSend(
  send: CommBuffer,
  recv: CommBuffer,
  inputs: Inputs,
  rank: number,
  size: number,
): Promise<void> {
  await clear(recv);
  await writeInput(send, inputs, rank, size);
}

/** Elements of `buf` that differ from rank `rank`'s inputs from element `offset` on. */
export function wrongInputs(
  buf: CommBuffer,
  inputs: Inputs,
  rank: number,
  size: number,
  offset = 0,
): Promise<number> {
  const value = (i: number) => inputOf(inputs, rank, size, offset + i, buf.dtype);
  return countWrongIn(
    buf,
    onePeriod(buf.dtype, buf.length, periodOf(inputs, size, buf.dtype), value),
  );
}

/**
 * A reproducible run's results for elements `offset…` (one period of them): the library's
 * reproducible sum of every rank's terms (tests/reproducible_test.ts holds it to a BigInt
 * reference), divided by the ranks for avg.
 */
function reproduciblePeriod(
  inputs: Inputs,
  dtype: Dtype,
  size: number,
  length: number,
  offset: number,
): TypedArray {
  const n = Math.min(length, REPRODUCIBLE_PERIOD);
  const terms = new DTYPE_INFO[dtype].array(size * n), out = new DTYPE_INFO[dtype].array(n);
  for (let r = 0; r < size; r++) {
    for (let k = 0; k < n; k++) {
      terms[r * n + k] = toStored(dtype, reproducibleInput(r, offset + k, dtype));
    }
  }
  reproducibleSum(terms, out, inputs.op === "avg" ? size : 1);
  return out;
}

/** The exact reduction of elements `offset…` (one period of them), as `dtype`. */
function reducedPeriod(
  op: ReduceOp,
  dtype: Dtype,
  size: number,
  length: number,
  offset: number,
): TypedArray {
  const exact = (k: number) =>
    expectedReduction(op, dtype, size, (r) => inputValue(op, r, size, offset + k, dtype));
  return onePeriod(dtype, length, period(op, size, dtype), exact);
}

/** Elements of `view` (elements `offset…` of the result) that differ from the exact reduction. */
export function wrongReduced(
  view: TypedArray,
  op: ReduceOp,
  dtype: Dtype,
  size: number,
  offset = 0,
): number {
  return countWrong(view, reducedPeriod(op, dtype, size, view.length, offset));
}

/** {@linkcode wrongReduced} of any buffer. */
export function wrongReducedIn(
  buf: CommBuffer,
  inputs: Inputs,
  size: number,
  offset = 0,
): Promise<number> {
  return countWrongIn(
    buf,
    inputs.reproducible
      ? reproduciblePeriod(inputs, buf.dtype, size, buf.length, offset)
      : reducedPeriod(inputs.op, buf.dtype, size, buf.length, offset),
  );
}
