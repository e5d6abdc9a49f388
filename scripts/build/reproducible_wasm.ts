/**
 * Builds the reproducible sums' f32 kernels: `kernels/reproducible_wat.ts` →
 * `kernels/reproducible_wasm_bytes.generated.ts` (see wat_compiler.ts).
 * @module
 */

import { compileWat, constant, write } from "./wat_compiler.ts";
import { reproducibleWat } from "../../kernels/mod.ts";

/** Compiles the module and returns its binary. */
export function compileReproducibleWasm(): Promise<Uint8Array> {
  return compileWat("reproducible.wat", reproducibleWat());
}

if (import.meta.main) {
  await write(
    new URL("../../kernels/reproducible_wasm_bytes.generated.ts", import.meta.url),
    "kernels/reproducible_wat.ts",
    [constant(
      "Base64 of the reproducible sums' f32 kernels.",
      "REPRODUCIBLE_WASM_BASE64",
      await compileReproducibleWasm(),
    )],
  );
}
