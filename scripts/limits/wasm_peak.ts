/**
 * The machine's WebAssembly SIMD peak for one thread, in GFLOP/s, of each build this engine runs:
 * the limits' loop of independent multiply-adds on registers alone (kernels/limits_wat.ts), so no
 * kernel of the trainer can beat it here. `deno task limits` measures it among the other limits;
 * docs/training.md puts the trainer's GFLOP/s per rank beside it.
 *
 *   deno run -A scripts/limits/wasm_peak.ts
 * @module
 */

import { summarize, timeTrials } from "../../bench/limits/measure.ts";
import {
  bestSimdBuild,
  limitsKernels,
  PEAK_FLOPS_PER_ITERATION,
  type SimdBuild,
} from "../../kernels/mod.ts";

/** The median GFLOP/s of the peak's loop in `build`. */
export async function wasmPeakGflops(build: SimdBuild): Promise<number> {
  const memory = new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
  const { peak } = limitsKernels(memory, { build });
  const iterations = 1 << 14;
  const rates = await timeTrials(() => (peak(iterations), iterations), { trialMs: 40 });
  return summarize(rates).median * PEAK_FLOPS_PER_ITERATION / 1e9;
}

if (import.meta.main) {
  const best = bestSimdBuild();
  for (const build of ["relaxed", "plain"] as const) {
    if (build === "relaxed" && best !== "relaxed") continue; // this engine lacks relaxed SIMD
    const which = build === best ? " (the trainer's build)" : "";
    const gflops = await wasmPeakGflops(build);
    console.log(
      `WebAssembly SIMD peak, one thread, ${build}${which}: ${gflops.toFixed(1)} GFLOP/s`,
    );
  }
}
