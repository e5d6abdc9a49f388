/**
 * Builds the limits' kernels: both builds of `kernels/limits_wat.ts` →
 * `kernels/limits_wasm_bytes.generated.ts` (see wat_compiler.ts).
 * @module
 */

import { compileWat, simdBuilds, write } from "./wat_compiler.ts";
import { limitsWat, type SimdBuild } from "../../kernels/mod.ts";

/** Compiles one build of the limits' kernels and returns its binary. */
export function compileLimitsWasm(build: SimdBuild): Promise<Uint8Array> {
  return compileWat(`limits_${build}.wat`, limitsWat(build));
}

if (import.meta.main) {
  await write(
    new URL("../../kernels/limits_wasm_bytes.generated.ts", import.meta.url),
    "kernels/limits_wat.ts",
    await simdBuilds("the limits' kernels", "LIMITS", compileLimitsWasm),
  );
}
