import type { DeviceView } from "../../kernels/gpu_kernels.ts";
import type { KernelOp } from "../types.ts";
import type { CollectiveContext } from "./context.ts";
import { deviceAccess } from "./_device.ts";

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
