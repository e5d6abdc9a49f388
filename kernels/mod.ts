/**
 * The kernels, the library's ground floor, for code that builds on them: the reductions and
 * half-precision conversions every collective runs, the limits' loops, the WebAssembly and WGSL
 * sources and their builds (the harness, the trainer, `deno task limits`, `deno bench` and the
 * builds of the `.generated.ts` bytes). Like `./internal`, they may change between minor
 * versions.
 *
 * A kernel takes its operands positionally, `reduce(op, dst, a, b)`, as BLAS and the WebAssembly
 * exports it wraps do: it runs once per chunk of every collective, where an options object would
 * cost a call its allocation (docs/design.md, "Entries").
 *
 * @example Summing two f32 arrays into a third
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { reduce } from "./mod.ts";
 *
 * const dst = new Float32Array(3);
 * reduce("sum", dst, Float32Array.of(1, 2, 3), Float32Array.of(10, 20, 30));
 * assertEquals([...dst], [11, 22, 33]);
 * ```
 * @module
 */

export { fromStored, setValues, toStored } from "./elements.ts";
export { fromHalf, halfKernels, reduce, toHalf } from "./reduce.ts";
export { reduceReference } from "./reduce_reference.ts";
export {
  codesOf,
  fromRecords,
  fromWindow,
  isReproducible,
  MAX_TERMS,
  planOf,
  recordsOf,
  reproducibleSum,
  windowOf,
} from "./reproducible.ts";
export type { ReproducibleDtype, ReproduciblePlan } from "./reproducible.ts";
export { REPRODUCIBLE_STEPS, reproducibleWat } from "./reproducible_wat.ts";
export { reduceBuildName, reduceWat } from "./reduce_wat.ts";
export type { Sharing } from "./reduce_wat.ts";
export { halfHardwareWat, placeholdersIn, withConversions } from "./half_hardware_wat.ts";
export {
  bestSimdBuild,
  limitsKernels,
  PEAK_FLOPS_PER_ITERATION,
  simdPeakGflops,
} from "./limits_kernels.ts";
export type { LimitsKernels, SimdBuild } from "./limits_kernels.ts";
export { limitsWat } from "./limits_wat.ts";
export { deviceRefusal, GpuKernels } from "./gpu_kernels.ts";
export type { DeviceView, KernelLimits, KernelSources } from "./gpu_kernels.ts";
