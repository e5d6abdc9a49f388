/**
 * The limits' kernels (limits_wat.ts), instantiated from their committed binary on a memory of the
 * caller's: what the engine validates decides the build, as for the trainer's kernels.
 * @module
 */

import {
  LIMITS_PLAIN_WASM_BASE64,
  LIMITS_RELAXED_WASM_BASE64,
} from "./limits_wasm_bytes.generated.ts";
import { PEAK_FLOPS_PER_ITERATION, type SimdBuild } from "./limits_wat.ts";

export { PEAK_FLOPS_PER_ITERATION, type SimdBuild };

const decode = (base64: string) => Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
const BYTES: Record<SimdBuild, string> = {
  relaxed: LIMITS_RELAXED_WASM_BASE64,
  plain: LIMITS_PLAIN_WASM_BASE64,
};

/** The build this engine runs: `relaxed` when it validates relaxed SIMD, else `plain`. */
export function bestSimdBuild(): SimdBuild {
  return WebAssembly.validate(decode(BYTES.relaxed)) ? "relaxed" : "plain";
}

/** The limits' kernels on `memory` (a shared WebAssembly memory); byte offsets into it. */
export interface LimitsKernels {
  /** `iterations` of the SIMD peak's loop ({@linkcode PEAK_FLOPS_PER_ITERATION} each). */
  peak(iterations: number): number;
  /** Copies `bytes` from `src` to `dst`. */
  copy(dst: number, src: number, bytes: number): void;
  /** `dst[i] = a[i] + b[i]` for `n` floats (a multiple of 16, at 16-byte aligned offsets). */
  add(dst: number, a: number, b: number, n: number): void;
}

/** The kernels of `build` (this engine's best unless given) on `memory`. */
export function limitsKernels(
  memory: WebAssembly.Memory,
  options?: { build?: SimdBuild },
): LimitsKernels {
  const module = new WebAssembly.Module(decode(BYTES[options?.build ?? bestSimdBuild()]));
  const e = new WebAssembly.Instance(module, { mem: { mem: memory } }).exports;
  return {
    peak: e.run as LimitsKernels["peak"],
    copy: e.copy as LimitsKernels["copy"],
    add: e.add as LimitsKernels["add"],
  };
}

/**
 * The SIMD peak of the thread that calls it, GFLOP/s: `trials` timed runs of the peak's loop,
 * each about `trialMs`, after one to warm up; the median.
 */
export function simdPeakGflops(options?: { trials?: number; trialMs?: number }): number {
  const trials = options?.trials ?? 9, trialMs = options?.trialMs ?? 20;
  const memory = new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
  const { peak } = limitsKernels(memory);
  const iterations = 1 << 12;
  const rates: number[] = [];
  for (let t = -1; t < trials; t++) {
    let done = 0;
    const start = performance.now();
    while (performance.now() - start < trialMs) {
      peak(iterations);
      done += iterations;
    }
    const rate = done * PEAK_FLOPS_PER_ITERATION / ((performance.now() - start) / 1000) / 1e9;
    if (t >= 0) rates.push(rate);
  }
  return rates.toSorted((a, b) => a - b)[trials >> 1];
}
