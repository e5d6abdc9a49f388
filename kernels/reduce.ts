/**
 * The reduction kernel front: WebAssembly SIMD when the buffers live in WebAssembly memories,
 * the plain-JS reference otherwise.
 * @module
 */

import { memoryOf } from "./memories.ts";
import { dtypeOf, type KernelOp, type TypedArray } from "./elements.ts";
import { REDUCE_WASM_BASE64 } from "./reduce_wasm_bytes.generated.ts";
import { reduceBuildName } from "./reduce_wat.ts";
import {
  divideReference,
  fromHalfReference,
  reduceReference,
  toHalfReference,
} from "./reduce_reference.ts";

type ReduceFn = (dst: number, a: number, b: number, n: number) => void;
type DivFn = (dst: number, n: number, k: number) => void;
type ConvertFn = (dst: number, src: number, n: number) => void;

const compiled = new Map<string, WebAssembly.Module>();
/** The kernel module for memories shared or private like these, compiled once per worker. */
function reduceModule(memories: WebAssembly.Memory[]): WebAssembly.Module {
  const key = reduceBuildName(
    memories.map((m) => m.buffer instanceof SharedArrayBuffer ? "shared" : "private"),
  );
  let module = compiled.get(key);
  if (!module) {
    const bytes = Uint8Array.from(atob(REDUCE_WASM_BASE64[key]), (c) => c.charCodeAt(0));
    compiled.set(key, module = new WebAssembly.Module(bytes));
  }
  return module;
}

/** Lengths up to this run the JS loop (same bits as the kernel: tests/kernels_test.ts). */
const SHORT_LENGTH = 64;
/** The same for bf16 words, whose JS loop decodes and encodes each (docs/dtypes.md). */
const SHORT_BF16 = 16;

/** Kernel instances per memory of `dst`, of `a` and of `b`. */
const instances = new WeakMap<
  WebAssembly.Memory,
  WeakMap<WebAssembly.Memory, WeakMap<WebAssembly.Memory, WebAssembly.Exports>>
>();

function kernels(
  dst: WebAssembly.Memory,
  a: WebAssembly.Memory,
  b: WebAssembly.Memory,
): WebAssembly.Exports {
  let byA = instances.get(dst);
  if (!byA) instances.set(dst, byA = new WeakMap());
  let byB = byA.get(a);
  if (!byB) byA.set(a, byB = new WeakMap());
  let exports = byB.get(b);
  if (!exports) {
    const module = reduceModule([dst, a, b]);
    exports = new WebAssembly.Instance(module, { mem: { dst, a, b } }).exports;
    byB.set(b, exports);
  }
  return exports;
}

/**
 * `dst[i] = a[i] op b[i]` for every element of `dst`; `dst` may alias `a` or `b`.
 * Runs the SIMD kernel when all three live in WebAssembly memories (a rank's heap, a peer's, or a
 * large `host` buffer's own), and the JS reference for short arrays and other buffers.
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
  if (n > (dst instanceof Uint16Array ? SHORT_BF16 : SHORT_LENGTH) && reduceWasm(op, dst, a, b)) {
    return;
  }
  reduceReference(op, dst, a, b);
}

/**
 * The SIMD kernel alone, for operands already checked by {@linkcode reduce}: false (and nothing
 * done) unless all three live in WebAssembly memories.
 */
export function reduceWasm(op: KernelOp, dst: TypedArray, a: TypedArray, b: TypedArray): boolean {
  const d = memoryOf(dst.buffer);
  if (!d) return false; // the common miss (a plain destination) looks up one buffer, not three
  const x = memoryOf(a.buffer), y = memoryOf(b.buffer);
  if (!x || !y) return false;
  const run = kernels(d, x, y)[`${op}_${dtypeOf(dst)}`] as ReduceFn;
  run(dst.byteOffset, a.byteOffset, b.byteOffset, dst.length);
  return true;
}

/** `dst[i] /= k` (integers truncate toward zero). */
export function divide(dst: TypedArray, k: number): void {
  if (dst.length === 0 || k === 1) return;
  const home = memoryOf(dst.buffer);
  if (home) {
    (kernels(home, home, home)[`div_${dtypeOf(dst)}`] as DivFn)(dst.byteOffset, dst.length, k);
  } else divideReference(dst, k);
}

/**
 * `dst` ← `src` rounded to `dst`'s half-precision type (f16, or bf16 words); with `residual`,
 * `src + residual` rounded, and the rounding error left in `residual` (error feedback).
 */
export function toHalf(
  dst: Float16Array | Uint16Array,
  src: Float32Array,
  residual?: Float32Array,
): void {
  const d = memoryOf(dst.buffer), a = memoryOf(src.buffer);
  const b = residual ? memoryOf(residual.buffer) : a;
  if (!d || !a || !b || dst.length <= SHORT_LENGTH) return toHalfReference(dst, src, residual);
  const name = `to_${dtypeOf(dst)}`;
  if (residual) {
    (kernels(d, a, b)[`${name}_feedback`] as ReduceFn)(
      dst.byteOffset,
      src.byteOffset,
      residual.byteOffset,
      dst.length,
    );
  } else (kernels(d, a, a)[name] as ConvertFn)(dst.byteOffset, src.byteOffset, dst.length);
}

/** `dst` ← the f32 values of `src`'s half-precision elements. */
export function fromHalf(dst: Float32Array, src: Float16Array | Uint16Array): void {
  const d = memoryOf(dst.buffer), a = memoryOf(src.buffer);
  if (!d || !a || dst.length <= SHORT_LENGTH) return fromHalfReference(dst, src);
  (kernels(d, a, a)[`from_${dtypeOf(src)}`] as ConvertFn)(
    dst.byteOffset,
    src.byteOffset,
    dst.length,
  );
}
