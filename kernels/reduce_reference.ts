/**
 * Plain-JS reductions: the reference the WebAssembly kernels are tested against, and the fallback
 * for buffers that do not live in a WebAssembly heap.
 * @module
 */

import { fromBf16, type KernelOp, toBf16, type TypedArray } from "./elements.ts";

/** `dst[i] = a[i] op b[i]` for every element of `dst` (all three the same dtype and length). */
export function reduceReference(op: KernelOp, dst: TypedArray, a: TypedArray, b: TypedArray): void {
  const n = dst.length;
  if (dst instanceof Uint16Array) return reduceBf16(op, dst, a as Uint16Array, b as Uint16Array);
  const int = dst instanceof Int32Array;
  switch (op) {
    case "sum":
      if (int) { for (let i = 0; i < n; i++) dst[i] = (a[i] + b[i]) | 0; }
      else for (let i = 0; i < n; i++) dst[i] = a[i] + b[i];
      return;
    case "prod":
      if (int) { for (let i = 0; i < n; i++) dst[i] = Math.imul(a[i], b[i]); }
      else for (let i = 0; i < n; i++) dst[i] = a[i] * b[i];
      return;
    case "max":
      for (let i = 0; i < n; i++) dst[i] = Math.max(a[i], b[i]);
      return;
    case "min":
      for (let i = 0; i < n; i++) dst[i] = Math.min(a[i], b[i]);
      return;
  }
}

/**
 * bf16 words: decoded, combined, rounded back (x op y of two bf16 values rounds as f32 then bf16
 * would, since f32 has more than twice bf16's precision).
 */
function reduceBf16(op: KernelOp, dst: Uint16Array, a: Uint16Array, b: Uint16Array): void {
  const n = dst.length;
  switch (op) {
    case "sum":
      for (let i = 0; i < n; i++) dst[i] = toBf16(fromBf16(a[i]) + fromBf16(b[i]));
      return;
    case "prod":
      for (let i = 0; i < n; i++) dst[i] = toBf16(fromBf16(a[i]) * fromBf16(b[i]));
      return;
    case "max":
      for (let i = 0; i < n; i++) dst[i] = toBf16(Math.max(fromBf16(a[i]), fromBf16(b[i])));
      return;
    case "min":
      for (let i = 0; i < n; i++) dst[i] = toBf16(Math.min(fromBf16(a[i]), fromBf16(b[i])));
      return;
  }
}

/** `dst[i] /= k`, truncating toward zero for integers (the second half of `avg`). */
export function divideReference(dst: TypedArray, k: number): void {
  if (dst instanceof Int32Array) {
    for (let i = 0; i < dst.length; i++) dst[i] = Math.trunc(dst[i] / k);
  } else if (dst instanceof Uint16Array) {
    for (let i = 0; i < dst.length; i++) dst[i] = toBf16(fromBf16(dst[i]) / k);
  } else for (let i = 0; i < dst.length; i++) dst[i] = dst[i] / k;
}

/** `dst` ← `src` (+ `residual`) rounded to half precision; the rounding error into `residual`. */
export function toHalfReference(
  dst: Float16Array | Uint16Array,
  src: Float32Array,
  residual?: Float32Array,
): void {
  const word = dst instanceof Uint16Array;
  for (let i = 0; i < dst.length; i++) {
    const x = residual ? Math.fround(src[i] + residual[i]) : src[i];
    dst[i] = word ? toBf16(x) : x;
    if (residual) residual[i] = x - (word ? fromBf16(dst[i]) : dst[i]);
  }
}

/** `dst` ← the values of `src`'s half-precision elements. */
export function fromHalfReference(dst: Float32Array, src: Float16Array | Uint16Array): void {
  if (src instanceof Float16Array) return dst.set(src);
  for (let i = 0; i < dst.length; i++) dst[i] = fromBf16(src[i]);
}
