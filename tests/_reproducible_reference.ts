// The reproducible sum's rule (docs/dtypes.md, "Reproducible sums") in BigInt fixed point, written
// apart from the kernels: every term exactly as m·2^e, rounded to a multiple of 2^G with integer
// arithmetic, summed as an integer, and the sum rounded once by counting bits. What the tests
// hold every reproducible result to, bit for bit.
import type { Dtype } from "../core.ts";

/** Precision, least normal exponent and largest exponent of each float dtype. */
const FORMATS = {
  f32: { p: 24, emin: -126, emax: 127 },
  f64: { p: 53, emin: -1022, emax: 1023 },
  f16: { p: 11, emin: -14, emax: 15 },
  bf16: { p: 8, emin: -126, emax: 127 },
} as const;
type Float = keyof typeof FORMATS;

const view = new DataView(new ArrayBuffer(8));

/** A finite nonzero f64 as [m, e] with x = m·2^e exactly. */
function exact(x: number): [bigint, number] {
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  const field = Number((bits >> 52n) & 0x7ffn);
  let m = bits & ((1n << 52n) - 1n);
  if (field !== 0) m |= 1n << 52n;
  const e = (field === 0 ? 1 : field) - 1075;
  return [x < 0 ? -m : m, e];
}

const bitLength = (a: bigint) => a.toString(2).length;

/** `a / 2^k` rounded to nearest, ties to even (a ≥ 0, k ≥ 1). */
function shiftRound(a: bigint, k: number): bigint {
  const q = a >> BigInt(k), rest = a - (q << BigInt(k)), half = 1n << BigInt(k - 1);
  return rest > half || (rest === half && (q & 1n) === 1n) ? q + 1n : q;
}

/** m·2^e rounded to a multiple of 2^g, in units of 2^g. */
function roundTo(m: bigint, e: number, g: number): bigint {
  if (e >= g) return m << BigInt(e - g);
  const a = shiftRound(m < 0n ? -m : m, g - e);
  return m < 0n ? -a : a;
}

/** q·2^g rounded once to `dtype` (a number `dtype` holds exactly). */
function toFormat(q: bigint, g: number, dtype: Float): number {
  if (q === 0n) return 0;
  const { p, emin, emax } = FORMATS[dtype], base = emin - p + 1;
  let a = q < 0n ? -q : q;
  const top = bitLength(a) - 1 + g;
  let lsb = Math.max(top - p + 1, base);
  if (lsb > g) {
    a = shiftRound(a, lsb - g);
  } else lsb = g;
  const magnitude = bitLength(a) - 1 + lsb > emax ? Infinity : Number(a) * 2 ** lsb;
  // A zero result is +0, whatever the signs.
  return q < 0n && magnitude !== 0 ? -magnitude : magnitude;
}

/**
 * The reproducible sum of `terms` (numbers a `dtype` holds) by the rule; `divisor` divides the
 * exact sum's f64 (it is one) before the one rounding to the dtype, as avg does.
 */
export function referenceSum(terms: number[], dtype: Dtype, divisor = 1): number {
  const f = dtype as Float, { p, emin } = FORMATS[f], base = emin - p + 1;
  if (terms.some((x) => Number.isNaN(x))) return NaN;
  const pos = terms.includes(Infinity), neg = terms.includes(-Infinity);
  if (pos && neg) return NaN;
  if (pos || neg) return pos ? Infinity : -Infinity;
  const finite = terms.filter((x) => x !== 0).map(exact);
  if (finite.length === 0) return 0;
  const cell = ([m, e]: [bigint, number]) =>
    Math.floor((bitLength(m < 0n ? -m : m) - 1 + e - base) / 8);
  const top = Math.max(...finite.map(cell));
  const g = base + 8 * (top - (f === "f64" ? 9 : 4));
  const q = finite.reduce((s, [m, e]) => s + roundTo(m, e, g), 0n);
  if (divisor === 1) return toFormat(q, g, f);
  // The exact sum is an f64 (its bits fit in 53); avg divides that and rounds the quotient.
  const quotient = toFormat(q, g, "f64") / divisor;
  return quotient === 0 ? 0 : toFormat(...exactOrZero(quotient), f);
}

function exactOrZero(x: number): [bigint, number] {
  if (!Number.isFinite(x)) return [x > 0 ? 1n << 2000n : -(1n << 2000n), 0];
  return exact(x);
}
