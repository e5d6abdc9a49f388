/**
 * Builds the reduction kernels: every combination of shared and private memories of
 * `reduce_wat.ts` → `reduce_wasm_bytes.generated.ts` (see wasm_build.ts).
 * @module
 */

import { compileWat, joined, write } from "./wat_compiler.ts";
import { reduceBuildName, reduceWat, type Sharing } from "../../kernels/reduce_wat.ts";

const SHARINGS: Sharing[] = ["shared", "private"];

/** Every combination of the reduction kernel's memories (`dst`, `a`, `b`): the generated keys. */
export const REDUCE_BUILDS: [Sharing, Sharing, Sharing][] = SHARINGS.flatMap((d) =>
  SHARINGS.flatMap((a) => SHARINGS.map((b): [Sharing, Sharing, Sharing] => [d, a, b]))
);

/** Compiles the reduction kernel module for one combination of memories; returns its binary. */
export function compileReduceWasm(build: [Sharing, Sharing, Sharing]): Promise<Uint8Array> {
  return compileWat(`reduce_${reduceBuildName(build)}.wat`, reduceWat(...build));
}

if (import.meta.main) {
  const modules: string[] = [];
  for (const build of REDUCE_BUILDS) {
    modules.push(`  ${reduceBuildName(build)}: ${joined(await compileReduceWasm(build), "  ")},\n`);
  }
  await write(
    new URL("../../kernels/reduce_wasm_bytes.generated.ts", import.meta.url),
    "kernels/reduce_wat.ts",
    [
      "/** Base64 of the reduction kernel modules, by the sharing of their `dst`, `a` and `b` " +
      "memories. */\n" +
      `export const REDUCE_WASM_BASE64: Record<string, string> = {\n${modules.join("")}};\n`,
    ],
  );
}
