/**
 * The machine's WebAssembly SIMD peak for one thread, in GFLOP/s: a loop of independent
 * `f32x4.relaxed_madd`s (FMAs where the CPU has them; `mul` + `add` in the plain build) on
 * registers alone, nothing loaded or stored, so no kernel of the trainer can beat it on this
 * engine. docs/training.md puts the trainer's GFLOP/s per rank beside it.
 *
 *   deno run -A deno/bench/wasm_peak.ts
 * @module
 */

import { compileWat } from "../build/wat_compiler.ts";
import type { MlpBuild } from "../../trainer/kernels/mlp_wat.ts";
import { bestMlpBuild } from "../../trainer/kernels/mlp.ts";

/** Independent accumulators: enough to cover an FMA's latency on every port, few enough to stay in registers. */
const CHAINS = 12;
/** Multiply-adds per chain per loop iteration. */
const DEPTH = 8;

function peakWat(build: MlpBuild): string {
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

/** Floating-point operations per iteration: 4 lanes × 2 (a multiply and an add) per madd. */
const FLOPS_PER_ITERATION = CHAINS * DEPTH * 4 * 2;

/** The median GFLOP/s of `trials` timed runs of `build`'s loop, each about `ms` long. */
export async function wasmPeakGflops(build: MlpBuild, trials = 15, ms = 40): Promise<number> {
  const module = await WebAssembly.compile(await compileWat("peak.wat", peakWat(build)));
  const run = (await WebAssembly.instantiate(module)).exports.run as (n: number) => number;
  let iterations = 1 << 16;
  run(iterations); // tier up
  const warm = performance.now();
  while (performance.now() - warm < ms / 4) run(iterations);
  const once = () => {
    const t0 = performance.now();
    run(iterations);
    return (performance.now() - t0) / 1000;
  };
  iterations = Math.max(1, Math.round(iterations * (ms / 1000) / once()));
  const rates = Array.from({ length: trials }, () => iterations * FLOPS_PER_ITERATION / once());
  return rates.toSorted((a, b) => a - b)[Math.floor(trials / 2)] / 1e9;
}

if (import.meta.main) {
  const build = bestMlpBuild();
  for (const each of ["relaxed", "plain"] as const) {
    if (each === "relaxed" && build !== "relaxed") continue; // this engine lacks relaxed SIMD
    const which = each === build ? " (the trainer's build)" : "";
    console.log(
      `WebAssembly SIMD peak, one thread, ${each}${which}: ${
        (await wasmPeakGflops(each)).toFixed(1)
      } GFLOP/s`,
    );
  }
}
