/**
 * The SIMD peak's loop (peak_wat.ts), instantiated from its committed binary: what the engine
 * validates decides the build, as for the trainer's kernels.
 * @module
 */

import { PEAK_PLAIN_WASM_BASE64, PEAK_RELAXED_WASM_BASE64 } from "./peak_wasm_bytes.generated.ts";
import { PEAK_FLOPS_PER_ITERATION, type SimdBuild } from "./peak_wat.ts";

export { PEAK_FLOPS_PER_ITERATION, type SimdBuild };

const decode = (base64: string) => Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
const BYTES: Record<SimdBuild, string> = {
  relaxed: PEAK_RELAXED_WASM_BASE64,
  plain: PEAK_PLAIN_WASM_BASE64,
};

/** The build this engine runs: `relaxed` when it validates relaxed SIMD, else `plain`. */
export function bestSimdBuild(): SimdBuild {
  return WebAssembly.validate(decode(BYTES.relaxed)) ? "relaxed" : "plain";
}

/** The loop of `build`: `run(n)` does `n` iterations of {@linkcode PEAK_FLOPS_PER_ITERATION}. */
export function peakLoop(build: SimdBuild): (iterations: number) => number {
  const module = new WebAssembly.Module(decode(BYTES[build]));
  return new WebAssembly.Instance(module).exports.run as (iterations: number) => number;
}
