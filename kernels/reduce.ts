/**
 * The reduction kernel front: WebAssembly SIMD when the buffers live in WebAssembly heaps,
 * the plain-JS reference otherwise.
 * @module
 */

import { memoryOf } from "../primitives/memory/heap.ts";
import { dtypeOf, type KernelOp, type TypedArray } from "../primitives/types.ts";
import { REDUCE_WASM_BASE64 } from "./reduce_wasm_bytes.generated.ts";
import { divideReference, reduceReference } from "./reduce_reference.ts";

type ReduceFn = (dst: number, a: number, b: number, n: number) => void;
type DivFn = (dst: number, n: number, k: number) => void;

let compiled: WebAssembly.Module | undefined;
/** The kernel module, compiled once per worker. */
export function reduceModule(): WebAssembly.Module {
  if (!compiled) {
    const bytes = Uint8Array.from(atob(REDUCE_WASM_BASE64), (c) => c.charCodeAt(0));
    compiled = new WebAssembly.Module(bytes);
  }
  return compiled;
}

/** Lengths up to this run the JS loop (same bits as the kernel: tests/kernels_test.ts). */
const SHORT_LENGTH = 64;

/** Kernel instances per (memory of dst and a, memory of b). */
const instances = new WeakMap<WebAssembly.Memory, Map<WebAssembly.Memory, WebAssembly.Exports>>();

function kernels(home: WebAssembly.Memory, other: WebAssembly.Memory): WebAssembly.Exports {
  let byOther = instances.get(home);
  if (!byOther) instances.set(home, byOther = new Map());
  let exports = byOther.get(other);
  if (!exports) {
    exports = new WebAssembly.Instance(reduceModule(), { heap: { own: home, other } }).exports;
    byOther.set(other, exports);
  }
  return exports;
}

/**
 * `dst[i] = a[i] op b[i]` for every element of `dst`; `dst` may alias `a` or `b`.
 * Runs the SIMD kernel when `dst` shares a heap with `a` or `b` and the other lives in any heap (its
 * own rank's or a peer's), and the JS reference for short arrays and buffers outside heaps.
 */
export function reduce(op: KernelOp, dst: TypedArray, a: TypedArray, b: TypedArray): void {
  const n = dst.length;
  // Same constructor, same dtype (each view is one of the three dtypes' arrays).
  const kind = dst.constructor;
  if (a.length !== n || b.length !== n || a.constructor !== kind || b.constructor !== kind) {
    throw new TypeError(
      `Cannot reduce ${dtypeOf(a)}[${a.length}] with ${dtypeOf(b)}[${b.length}] into ` +
        `${dtypeOf(dst)}[${n}]: dtypes and lengths must match`,
    );
  }
  // A call into WebAssembly costs more than a short loop (1 float: ~100 ns against ~10 ns).
  if (n > SHORT_LENGTH && reduceWasm(op, dst, a, b)) return;
  reduceReference(op, dst, a, b);
}

/**
 * The SIMD kernel alone, for operands already checked by {@linkcode reduce}: false (and nothing
 * done) unless `dst` shares a heap with `a` or `b` and the other operand lives in a heap too.
 */
export function reduceWasm(op: KernelOp, dst: TypedArray, a: TypedArray, b: TypedArray): boolean {
  const home = memoryOf(dst.buffer);
  if (!home) return false;
  // The kernel reads its first operand from dst's heap; every op commutes, so the operands may
  // trade places.
  const [near, far] = memoryOf(a.buffer) === home ? [a, b] : [b, a];
  const other = memoryOf(far.buffer);
  if (!other || memoryOf(near.buffer) !== home) return false;
  (kernels(home, other)[`${op}_${dtypeOf(dst)}`] as ReduceFn)(
    dst.byteOffset,
    near.byteOffset,
    far.byteOffset,
    dst.length,
  );
  return true;
}

/** `dst[i] /= k` (integers truncate toward zero). */
export function divide(dst: TypedArray, k: number): void {
  if (dst.length === 0 || k === 1) return;
  const home = memoryOf(dst.buffer);
  if (home) (kernels(home, home)[`div_${dtypeOf(dst)}`] as DivFn)(dst.byteOffset, dst.length, k);
  else divideReference(dst, k);
}
