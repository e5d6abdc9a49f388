/**
 * The WebAssembly SIMD peak's loop, in two builds: independent `f32x4.relaxed_madd`s (fused
 * multiply-adds where the CPU has them) or `mul` + `add`, on registers alone — nothing loaded or
 * stored — so no kernel on this engine can compute faster (`deno task limits`; the trainer's
 * GFLOP/s are read against it). Built into `peak_wasm_bytes.generated.ts` by
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

/** The loop's module: `run(n)` does `n` iterations and returns a lane of the sum (kept live). */
export function peakWat(build: SimdBuild): string {
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
  return `(module
  (func (export "run") (param $n i32) (result f32)
    (local $m v128) (local $k v128) ${chains.map((c) => `(local $a${c} v128)`).join(" ")}
    (local.set $m (f32x4.splat (f32.const 0.999)))
    (local.set $k (f32x4.splat (f32.const 0.001)))
    (loop $loop
      ${body}
      (br_if $loop (local.tee $n (i32.sub (local.get $n) (i32.const 1)))))
    (f32x4.extract_lane 0 ${total})))`;
}
