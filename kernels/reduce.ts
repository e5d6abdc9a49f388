/**
 * The reduction kernel front: WebAssembly SIMD when the buffers live in WebAssembly memories,
 * the plain-JS reference otherwise. f16 runs on the engine's own conversions where it validates
 * them (V8 with `--experimental-wasm-fp16`: half_hardware_wat.ts), else on the software kernels.
 * The same modules copy between two memories (`copyWasm`).
 * @module
 */

import { memoryOf } from "./memory_owners.ts";
import { type Dtype, dtypeOf, type KernelOp, type TypedArray } from "./elements.ts";
import { F16_HARDWARE_WASM_BASE64, REDUCE_WASM_BASE64 } from "./reduce_wasm_bytes.generated.ts";
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
type CopyFn = (dst: number, src: number, bytes: number) => void;

/** The kernels' builds: every dtype's, and f16's on the engine's conversions. */
type Build = "all" | "f16_hardware";
const BUILDS: Record<Build, Record<string, string>> = {
  all: REDUCE_WASM_BASE64,
  f16_hardware: F16_HARDWARE_WASM_BASE64,
};

const decode = (base64: string) => Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
const compiled = new Map<string, WebAssembly.Module>();
/** The kernel module of `build` for memories shared or private like these, compiled once per worker. */
function reduceModule(build: Build, memories: WebAssembly.Memory[]): WebAssembly.Module {
  const key = reduceBuildName(
    memories.map((m) => m.buffer instanceof SharedArrayBuffer ? "shared" : "private"),
  );
  let module = compiled.get(`${build} ${key}`);
  if (!module) {
    module = new WebAssembly.Module(decode(BUILDS[build][key]));
    compiled.set(`${build} ${key}`, module);
  }
  return module;
}

/** Whether this engine validates the f16 conversions (checked once), and whether to use them. */
let f16Hardware: boolean | undefined;

/**
 * Which f16 kernels run here: `hardware` (the engine's f16x8 conversions) or `software` (the
 * conversions spelt out in SIMD integer ops).
 */
export function halfKernels(): "hardware" | "software" {
  f16Hardware ??= WebAssembly.validate(decode(F16_HARDWARE_WASM_BASE64.shared_shared_shared));
  return f16Hardware ? "hardware" : "software";
}

/** Runs f16 on the software kernels even where the engine has the conversions (tests: both paths). */
export function useSoftwareHalf(software: boolean): void {
  f16Hardware = software ? false : undefined;
}

/** Lengths up to this run the JS loop (same bits as the kernel: tests/kernels_test.ts). */
const SHORT_LENGTH = 64;
/** The same for bf16 words, whose JS loop decodes and encodes each (docs/dtypes.md). */
const SHORT_BF16 = 16;

/** Kernel instances of each build per memory of `dst`, of `a` and of `b`. */
const instances: Record<
  Build,
  WeakMap<
    WebAssembly.Memory,
    WeakMap<WebAssembly.Memory, WeakMap<WebAssembly.Memory, WebAssembly.Exports>>
  >
> = { all: new WeakMap(), f16_hardware: new WeakMap() };

/** The kernels for arrays of `dtype` in memories `dst`, `a` and `b`. */
function kernels(
  dtype: Dtype,
  dst: WebAssembly.Memory,
  a: WebAssembly.Memory,
  b: WebAssembly.Memory,
): WebAssembly.Exports {
  const build: Build = dtype === "f16" && halfKernels() === "hardware" ? "f16_hardware" : "all";
  return instance(build, dst, a, b);
}

/** The instance of `build` on memories `dst`, `a` and `b`, made once per worker. */
function instance(
  build: Build,
  dst: WebAssembly.Memory,
  a: WebAssembly.Memory,
  b: WebAssembly.Memory,
): WebAssembly.Exports {
  let byA = instances[build].get(dst);
  if (!byA) instances[build].set(dst, byA = new WeakMap());
  let byB = byA.get(a);
  if (!byB) byA.set(a, byB = new WeakMap());
  let exports = byB.get(b);
  if (!exports) {
    const module = reduceModule(build, [dst, a, b]);
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
  const dtype = dtypeOf(dst);
  const run = kernels(dtype, d, x, y)[`${op}_${dtype}`] as ReduceFn;
  run(dst.byteOffset, a.byteOffset, b.byteOffset, dst.length);
  return true;
}

/** Each pair of memories' copy, looked up once per call (the instances' own map holds three). */
const copies = new WeakMap<WebAssembly.Memory, WeakMap<WebAssembly.Memory, CopyFn>>();

/**
 * Copies `bytes` bytes from `src`'s buffer at byte `srcAt` into `dst`'s at `dstAt`, by
 * `memory.copy`: false (and nothing done) unless both live in WebAssembly memories. The operands
 * come as BLAS takes them (kernels/copy.ts checks them).
 */
export function copyWasm(
  dst: ArrayBufferView,
  dstAt: number,
  src: ArrayBufferView,
  srcAt: number,
  bytes: number,
): boolean {
  const d = memoryOf(dst.buffer);
  if (!d) return false;
  const s = memoryOf(src.buffer);
  if (!s) return false;
  let bySource = copies.get(d);
  if (!bySource) copies.set(d, bySource = new WeakMap());
  let run = bySource.get(s);
  if (!run) bySource.set(s, run = instance("all", d, s, s).copy as CopyFn);
  run(dstAt, srcAt, bytes);
  return true;
}

/** `dst[i] /= k` (integers truncate toward zero). */
export function divide(dst: TypedArray, k: number): void {
  if (dst.length === 0 || k === 1) return;
  const home = memoryOf(dst.buffer);
  if (home) {
    const dtype = dtypeOf(dst);
    (kernels(dtype, home, home, home)[`div_${dtype}`] as DivFn)(dst.byteOffset, dst.length, k);
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
  const dtype = dtypeOf(dst), name = `to_${dtype}`;
  if (residual) {
    (kernels(dtype, d, a, b)[`${name}_feedback`] as ReduceFn)(
      dst.byteOffset,
      src.byteOffset,
      residual.byteOffset,
      dst.length,
    );
  } else (kernels(dtype, d, a, a)[name] as ConvertFn)(dst.byteOffset, src.byteOffset, dst.length);
}

/** `dst` ← the f32 values of `src`'s half-precision elements. */
export function fromHalf(dst: Float32Array, src: Float16Array | Uint16Array): void {
  const d = memoryOf(dst.buffer), a = memoryOf(src.buffer);
  if (!d || !a || dst.length <= SHORT_LENGTH) return fromHalfReference(dst, src);
  const dtype = dtypeOf(src);
  (kernels(dtype, d, a, a)[`from_${dtype}`] as ConvertFn)(
    dst.byteOffset,
    src.byteOffset,
    dst.length,
  );
}
