/**
 * Generates the WebAssembly text of the SIMD reduction kernels.
 *
 * The module imports three memories, one per operand: `dst`, `a` and `b` (a rank's heap, a
 * peer's, or the memory of one large `host` buffer; the same memory may come more than once), each
 * shared or private (see {@linkcode reduceWat}). Every `<op>_<dtype>(dst, a, b, n)` computes
 * `dst[dst + i] = a[a + i] op b[b + i]` for `i < n` elements: a 4× unrolled v128 loop, a
 * single-vector loop, then a scalar tail, so any length and any alignment work.
 * `div_<dtype>(dst, n, k)` divides in place in `dst` (the second half of `avg`). Half-precision
 * dtypes compute in f32 and have conversions to and from f32 besides (half_wat.ts). `copy(dst, a,
 * bytes)` copies bytes from `a` to `dst`: the engine's `memory.copy`, which outruns a typed
 * array's `set` on shared memory (kernels/copy.ts).
 *
 * `deno task build:wasm` compiles this text with wabt into `reduce_wasm_bytes.generated.ts`.
 * @module
 */

import { KERNEL_OPS, type KernelOp } from "./elements.ts";
import {
  halfDivFunc,
  type HalfDtype,
  halfNarrowFunc,
  halfReduceFunc,
  halfWidenFunc,
} from "./half_wat.ts";

/** The dtypes whose kernels compute in their own lanes. */
type WideDtype = "f32" | "f64" | "i32";

interface DtypeCode {
  bytes: number;
  scalar: "f32" | "f64" | "i32";
  lanes: string;
  vec: Record<KernelOp, string>;
  /** Scalar op on two values already on the stack (`$x`, `$y` locals available). */
  scalar_op: Record<KernelOp, string>;
}

const CODE: Record<WideDtype, DtypeCode> = {
  f32: {
    bytes: 4,
    scalar: "f32",
    lanes: "f32x4",
    vec: { sum: "f32x4.add", prod: "f32x4.mul", max: "f32x4.max", min: "f32x4.min" },
    scalar_op: { sum: "f32.add", prod: "f32.mul", max: "f32.max", min: "f32.min" },
  },
  f64: {
    bytes: 8,
    scalar: "f64",
    lanes: "f64x2",
    vec: { sum: "f64x2.add", prod: "f64x2.mul", max: "f64x2.max", min: "f64x2.min" },
    scalar_op: { sum: "f64.add", prod: "f64.mul", max: "f64.max", min: "f64.min" },
  },
  i32: {
    bytes: 4,
    scalar: "i32",
    lanes: "i32x4",
    vec: { sum: "i32x4.add", prod: "i32x4.mul", max: "i32x4.max_s", min: "i32x4.min_s" },
    scalar_op: {
      sum: "i32.add",
      prod: "i32.mul",
      max: "(local.set $y) (local.set $x) (select (local.get $x) (local.get $y) " +
        "(i32.gt_s (local.get $x) (local.get $y)))",
      min: "(local.set $y) (local.set $x) (select (local.get $x) (local.get $y) " +
        "(i32.lt_s (local.get $x) (local.get $y)))",
    },
  },
};

function step(ptrs: string[], by: number): string {
  return ptrs.map((p) => `(local.set ${p} (i32.add (local.get ${p}) (i32.const ${by})))`).join(
    "\n      ",
  );
}

function reduceFunc(op: KernelOp, dtype: WideDtype): string {
  const c = CODE[dtype];
  const vec = (off: number) =>
    `(v128.store $dst_mem offset=${off} (local.get $d) (${c.vec[op]} ` +
    `(v128.load $a_mem offset=${off} (local.get $a)) (v128.load $b_mem offset=${off} (local.get $b))))`;
  const unrolled = [0, 16, 32, 48].map(vec).join("\n      ");
  return `
  (func (export "${op}_${dtype}") (param $d i32) (param $a i32) (param $b i32) (param $n i32)
    (local $end i32) (local $x ${c.scalar}) (local $y ${c.scalar})
    ;; 4 vectors per iteration while 64 bytes remain
    (local.set $end (i32.add (local.get $d)
      (i32.and (i32.mul (local.get $n) (i32.const ${c.bytes})) (i32.const -64))))
    (block $done4 (loop $loop4
      (br_if $done4 (i32.ge_u (local.get $d) (local.get $end)))
      ${unrolled}
      ${step(["$d", "$a", "$b"], 64)}
      (br $loop4)))
    ;; single vectors while 16 bytes remain
    (local.set $end (i32.add (local.get $end)
      (i32.and (i32.and (i32.mul (local.get $n) (i32.const ${c.bytes})) (i32.const 63)) (i32.const -16))))
    (block $done1 (loop $loop1
      (br_if $done1 (i32.ge_u (local.get $d) (local.get $end)))
      ${vec(0)}
      ${step(["$d", "$a", "$b"], 16)}
      (br $loop1)))
    ;; scalar tail
    (local.set $end (i32.add (local.get $end)
      (i32.and (i32.mul (local.get $n) (i32.const ${c.bytes})) (i32.const 15))))
    (block $done0 (loop $loop0
      (br_if $done0 (i32.ge_u (local.get $d) (local.get $end)))
      (local.get $d)
      (${c.scalar}.load $a_mem (local.get $a))
      (${c.scalar}.load $b_mem (local.get $b))
      ${c.scalar_op[op].startsWith("(") ? c.scalar_op[op] : `(${c.scalar_op[op]})`}
      (${c.scalar}.store $dst_mem)
      ${step(["$d", "$a", "$b"], c.bytes)}
      (br $loop0))))`;
}

function divFunc(dtype: WideDtype): string {
  const c = CODE[dtype];
  if (dtype === "i32") {
    // No SIMD integer division: a scalar loop, truncating toward zero like C and NCCL.
    return `
  (func (export "div_i32") (param $d i32) (param $n i32) (param $k i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $d) (i32.mul (local.get $n) (i32.const 4))))
    (block $done (loop $loop
      (br_if $done (i32.ge_u (local.get $d) (local.get $end)))
      (i32.store $dst_mem (local.get $d) (i32.div_s (i32.load $dst_mem (local.get $d)) (local.get $k)))
      ${step(["$d"], 4)}
      (br $loop))))`;
  }
  return `
  (func (export "div_${dtype}") (param $d i32) (param $n i32) (param $k ${c.scalar})
    (local $end i32) (local $kv v128)
    (local.set $kv (${c.lanes}.splat (local.get $k)))
    (local.set $end (i32.add (local.get $d)
      (i32.and (i32.mul (local.get $n) (i32.const ${c.bytes})) (i32.const -16))))
    (block $done1 (loop $loop1
      (br_if $done1 (i32.ge_u (local.get $d) (local.get $end)))
      (v128.store $dst_mem (local.get $d) (${c.lanes}.div (v128.load $dst_mem (local.get $d)) (local.get $kv)))
      ${step(["$d"], 16)}
      (br $loop1)))
    (local.set $end (i32.add (local.get $end)
      (i32.and (i32.mul (local.get $n) (i32.const ${c.bytes})) (i32.const 15))))
    (block $done0 (loop $loop0
      (br_if $done0 (i32.ge_u (local.get $d) (local.get $end)))
      (${c.scalar}.store $dst_mem (local.get $d) (${c.scalar}.div (${c.scalar}.load $dst_mem (local.get $d)) (local.get $k)))
      ${step(["$d"], c.bytes)}
      (br $loop0))))`;
}

/** Whether a kernel's memory is a shared heap or a private memory (a large `host` buffer's). */
export type Sharing = "shared" | "private";

/** The name of the build for `dst`, `a` and `b` memories of this sharing (the generated keys). */
export function reduceBuildName(build: readonly Sharing[]): string {
  return build.join("_");
}

/** The kernel module for `dst`, `a` and `b` memories of the given sharing, as text. */
export function reduceWat(dst: Sharing, a: Sharing, b: Sharing): string {
  const wide: WideDtype[] = ["f32", "f64", "i32"], half: HalfDtype[] = ["f16", "bf16"];
  const funcs = [
    ...wide.flatMap((dt) => [...KERNEL_OPS.map((op) => reduceFunc(op, dt)), divFunc(dt)]),
    ...half.flatMap((dt) => [
      ...KERNEL_OPS.map((op) => halfReduceFunc(op, dt)),
      halfDivFunc(dt),
      halfNarrowFunc(dt, false),
      halfNarrowFunc(dt, true),
      halfWidenFunc(dt),
    ]),
  ];
  // An imported memory's type names its sharing, so each combination is a module of its own.
  const memory = (name: string, sharing: Sharing) => {
    const shared = sharing === "shared" ? " shared" : "";
    return `(import "mem" "${name}" (memory $${name}_mem 1 65536${shared}))`;
  };
  const copy = `
  (func (export "copy") (param $dst i32) (param $a i32) (param $bytes i32)
    (memory.copy $dst_mem $a_mem (local.get $dst) (local.get $a) (local.get $bytes)))`;
  return `(module
  ${memory("dst", dst)}
  ${memory("a", a)}
  ${memory("b", b)}${funcs.join("\n")}${copy}
)\n`;
}
