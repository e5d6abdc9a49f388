/**
 * The runtime flags a rank process is started with: those this process's capabilities came from.
 * V8's `--experimental-wasm-fp16` lets f16 run on the engine's conversions (kernels/reduce.ts);
 * a launcher started with it starts its ranks with it, and one started without it (a library
 * user's program) starts them without, so every rank of a group runs the same f16 kernels.
 * @module
 */

import { halfKernels } from "../../kernels/reduce.ts";

/** The flags for `deno run` of a rank process (before the script). */
export function rankRuntimeFlags(): string[] {
  return halfKernels() === "hardware" ? ["--v8-flags=--experimental-wasm-fp16"] : [];
}
