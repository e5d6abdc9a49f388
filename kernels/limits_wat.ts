/**
 * The kernels that measure the machine's limits (`deno task limits`), in two builds: `run`, the
 * WebAssembly SIMD peak — independent `f32x4.relaxed_madd`s (fused multiply-adds where the CPU
 * has them) or `mul` + `add` on registers alone, nothing loaded or stored, so no kernel on this
 * engine can compute faster (the trainer's GFLOP/s are read against it); `copy`, a
 * `memory.copy`; and `add`, a 4× unrolled `f32x4.add` of two arrays into a third (read two,
 * write one), on the imported memory. Built into `limits_wasm_bytes.generated.ts` by
 * `deno task build:wasm`.
 * @module
 */

/** The relaxed-SIMD build (FMA where the engine has it) or the plain-SIMD one. */
export type SimdBuild = "relaxed" | "plain";

/** Independent accumulators: enough to cover an FMA's latency on every port, few enough to stay in registers. */
const CHAINS = 12;
/** Multiply-adds per chain per loop iteration. */
const DEPTH = 8;

/** Floating-point operations per iteration of `run`: 4 lanes × 2 (a multiply and an add) per madd. */
export const PEAK_FLOPS_PER_ITERATION = CHAINS * DEPTH * 4 * 2;

/**
 * The module: `run(n)` does `n` iterations of the peak's loop and returns a lane of the sum (kept
 * live); `copy(dst, src, bytes)`; `add(dst, a, b, n)` on `n` floats (a multiple of 16, at
 * 16-byte aligned offsets).
 */
export function limitsWat(build: SimdBuild): string {
  const chains = Array.from({ length: CHAINS }, (_, c) => c);
  const madd = (c: number) =>
    build === "relaxed"
      ? `(local.set $a${c} (f32x4.relaxed_madd (local.get $a${c}) (local.get $m) (local.get $k)))`
      : `(local.set $a${c} (f32x4.add (f32x4.mul (local.get $a${c}) (local.get $m)) (local.get $k)))`;
  const body = Array.from({ length: DEPTH }, () => chains.map(madd).join(" ")).join("\n      ");
  // The sum of the chains is returned, so that no engine can drop the work.
  const total = chains.slice(1).reduce(
    (sum, c) => `(f32x4.add ${sum} (local.get $a${c}))`,
    "(local.get $a0)",
  );
  const at = (offset: number) =>
    `(f32x4.add (v128.load offset=${offset} (local.get $a)) (v128.load offset=${offset} (local.get $b)))`;
  const add4 = [0, 16, 32, 48].map((o) => `(v128.store offset=${o} (local.get $d) ${at(o)})`)
    .join("\n        ");
  return `(module
  (import "mem" "mem" (memory 1 65536 shared))
  (func (export "copy") (param $dst i32) (param $src i32) (param $bytes i32)
    (memory.copy (local.get $dst) (local.get $src) (local.get $bytes)))
  (func (export "add") (param $d i32) (param $a i32) (param $b i32) (param $n i32) (local $end i32)
    (local.set $end (i32.add (local.get $d) (i32.shl (local.get $n) (i32.const 2))))
    (block $done (loop $loop
        (br_if $done (i32.ge_u (local.get $d) (local.get $end)))
        ${add4}
        (local.set $d (i32.add (local.get $d) (i32.const 64)))
        (local.set $a (i32.add (local.get $a) (i32.const 64)))
        (local.set $b (i32.add (local.get $b) (i32.const 64)))
        (br $loop))))
  (func (export "run") (param $n i32) (result f32)
    (local $m v128) (local $k v128) ${chains.map((c) => `(local $a${c} v128)`).join(" ")}
    (local.set $m (f32x4.splat (f32.const 0.999)))
    (local.set $k (f32x4.splat (f32.const 0.001)))
    (loop $loop
      ${body}
      (br_if $loop (local.tee $n (i32.sub (local.get $n) (i32.const 1)))))
    (f32x4.extract_lane 0 ${total})))`;
}
