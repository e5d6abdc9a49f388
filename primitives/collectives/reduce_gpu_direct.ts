import type { DeviceView } from "../../kernels/gpu_kernels.ts";
import type { KernelOp } from "../types.ts";
import type { CollectiveContext } from "./context.ts";
import { deviceAccess } from "./_device.ts";
import type { DeviceAlgorithm } from "./algorithm.ts";

/**
 * Direct device reduce (`gpu` only): one kernel reads every rank's input once and writes the
 * result into the root's output.
 */
export function reduceGpuDirect(
  ctx: CollectiveContext,
  input: DeviceView,
  output: DeviceView,
  op: KernelOp,
  root: number,
): Promise<void> {
  return deviceAccess(ctx, "gpu_direct").join(ctx.stamp, { input, output }, (all, device) => {
    device.reduce(op, [all[root].output], all.map((a) => a.input));
  });
}

/** reduce `gpu_direct` (see {@linkcode reduceGpuDirect}). */
export const REDUCE_GPU_DIRECT: DeviceAlgorithm<"reduce"> = {
  name: "gpu_direct",
  collective: "reduce",
  needs: "device",
  run: reduceGpuDirect,
  // Direct access moves each byte across memory once: ahead of every other at every size.
  winsBelow: () => Infinity,
};
