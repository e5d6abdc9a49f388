// GPU tests run wherever an adapter answers (CI has Mesa's llvmpipe) and skip only where none
// exists at all; `gpuTest` says which, in the test's name.
import { gpuUnavailable } from "../primitives/memory/gpu_device.ts";

/** Why this machine has no WebGPU device, or undefined when it has one. */
export const NO_GPU: string | undefined = await gpuUnavailable();

/** A test that needs a WebGPU device: ignored (not passed) where none exists. */
export function gpuTest(name: string, fn: () => Promise<void>): void {
  Deno.test({ name: NO_GPU ? `${name} (skipped: ${NO_GPU})` : name, ignore: !!NO_GPU, fn });
}
