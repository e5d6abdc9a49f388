/**
 * Builds the trainer's kernels: both builds of `mlp_wat.ts` → `mlp_wasm_bytes.generated.ts` (see
 * scripts/build/wat_compiler.ts).
 * @module
 */

import { compileWat, simdBuilds, write } from "./wat_compiler.ts";
import { type MlpBuild, mlpWat } from "../../trainer/kernels/mlp_wat.ts";

/** Compiles one build of the trainer's kernel module and returns its binary. */
export function compileMlpWasm(build: MlpBuild): Promise<Uint8Array> {
  return compileWat(`mlp_${build}.wat`, mlpWat(build));
}

if (import.meta.main) {
  await write(
    new URL("../../trainer/kernels/mlp_wasm_bytes.generated.ts", import.meta.url),
    "trainer/kernels/mlp_wat.ts",
    await simdBuilds("the trainer's kernel module", "MLP", compileMlpWasm),
  );
}
