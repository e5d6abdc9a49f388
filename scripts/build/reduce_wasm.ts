/**
 * Builds the reduction kernels: every combination of shared and private memories of
 * `reduce_wat.ts`, and of the f16 kernels on the engine's conversions (`half_hardware_wat.ts`) →
 * `reduce_wasm_bytes.generated.ts` (see wat_compiler.ts).
 * @module
 */

import { compileWat, joined, write } from "./wat_compiler.ts";
import { reduceBuildName, reduceWat, type Sharing } from "../../kernels/mod.ts";
import { halfHardwareWat, placeholdersIn, withConversions } from "../../kernels/mod.ts";

const SHARINGS: Sharing[] = ["shared", "private"];

/** Every combination of the reduction kernel's memories (`dst`, `a`, `b`): the generated keys. */
export const REDUCE_BUILDS: [Sharing, Sharing, Sharing][] = SHARINGS.flatMap((d) =>
  SHARINGS.flatMap((a) => SHARINGS.map((b): [Sharing, Sharing, Sharing] => [d, a, b]))
);

/** Compiles the reduction kernel module for one combination of memories; returns its binary. */
export function compileReduceWasm(build: [Sharing, Sharing, Sharing]): Promise<Uint8Array> {
  return compileWat(`reduce_${reduceBuildName(build)}.wat`, reduceWat(...build));
}

/**
 * Compiles the f16 kernels on the engine's conversions for one combination of memories: wabt
 * compiles the text with placeholders, which are then replaced (half_hardware_wat.ts).
 */
export async function compileHalfHardwareWasm(
  build: [Sharing, Sharing, Sharing],
): Promise<Uint8Array> {
  const text = halfHardwareWat(...build);
  const bytes = await compileWat(`f16_hardware_${reduceBuildName(build)}.wat`, text);
  return withConversions(bytes, placeholdersIn(text));
}

if (import.meta.main) {
  const modules: string[] = [], hardware: string[] = [];
  for (const build of REDUCE_BUILDS) {
    modules.push(`  ${reduceBuildName(build)}: ${joined(await compileReduceWasm(build), "  ")},\n`);
    const f16 = await compileHalfHardwareWasm(build);
    hardware.push(`  ${reduceBuildName(build)}: ${joined(f16, "  ")},\n`);
  }
  await write(
    new URL("../../kernels/reduce_wasm_bytes.generated.ts", import.meta.url),
    "kernels/reduce_wat.ts",
    [
      "/** Base64 of the reduction kernel modules, by the sharing of their `dst`, `a` and `b` " +
      "memories. */\n" +
      `export const REDUCE_WASM_BASE64: Record<string, string> = {\n${modules.join("")}};\n`,
      "/** Base64 of the f16 kernels on the engine's conversions (kernels/half_hardware_wat.ts), " +
      "by the same keys. */\n" +
      `export const F16_HARDWARE_WASM_BASE64: Record<string, string> = {\n${hardware.join("")}};\n`,
    ],
  );
}
