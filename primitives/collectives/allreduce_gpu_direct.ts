import type { DeviceView } from "../../kernels/gpu_kernels.ts";
import type { KernelOp } from "../types.ts";
import type { CollectiveContext } from "./context.ts";
import { deviceAccess } from "./_device.ts";
import type { DeviceAlgorithm } from "./algorithm.ts";

/**
 * Direct device allreduce (`gpu` only): one kernel reads element i of every rank's input once and
 * writes the result into every rank's output (or, past the bindings a dispatch may hold, into
 * scratch and then copies). N reads and N writes of the buffer, one dispatch per window.
 */
export function allreduceGpuDirect(
  ctx: CollectiveContext,
  input: DeviceView,
  output: DeviceView,
  op: KernelOp,
): Promise<void> {
  return deviceAccess(ctx, "gpu_direct").join(ctx.stamp, { input, output }, (all, device) => {
    device.reduce(op, all.map((a) => a.output), all.map((a) => a.input));
  });
}

/** allreduce `gpu_direct` (see {@linkcode allreduceGpuDirect}). */
export const ALLREDUCE_GPU_DIRECT: DeviceAlgorithm<"allreduce"> = {
  name: "gpu_direct",
  collective: "allreduce",
  needs: "device",
  run: allreduceGpuDirect,
  // Direct access moves each byte across memory once: ahead of every other at every size.
  winsBelow: () => Infinity,
};
