/**
 * Builds the SIMD peak's loop: both builds of `kernels/peak_wat.ts` →
 * `kernels/peak_wasm_bytes.generated.ts` (see wat_compiler.ts).
 * @module
 */

import { compileWat, constant, write } from "./wat_compiler.ts";
import { peakWat, type SimdBuild } from "../../kernels/peak_wat.ts";

/** Compiles one build of the peak's loop and returns its binary. */
export function compilePeakWasm(build: SimdBuild): Promise<Uint8Array> {
  return compileWat(`peak_${build}.wat`, peakWat(build));
}

if (import.meta.main) {
  await write(
    new URL("../../kernels/peak_wasm_bytes.generated.ts", import.meta.url),
    "kernels/peak_wat.ts",
    [
      constant(
        "Base64 of the SIMD peak's loop, relaxed-SIMD build.",
        "PEAK_RELAXED_WASM_BASE64",
        await compilePeakWasm("relaxed"),
      ),
      constant(
        "Base64 of the SIMD peak's loop, plain-SIMD build.",
        "PEAK_PLAIN_WASM_BASE64",
        await compilePeakWasm("plain"),
      ),
    ],
  );
}
