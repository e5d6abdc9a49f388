import type { DeviceView } from "../../kernels/gpu_kernels.ts";
import type { KernelOp } from "../types.ts";
import type { CollectiveContext } from "./context.ts";
import { deviceAccess } from "./device.ts";

/** Direct device reduce (`gpu` only): one kernel reads every rank's buffer once into the root's. */
export function reduceGpuDirect(
  ctx: CollectiveContext,
  buf: DeviceView,
  op: KernelOp,
  root: number,
): Promise<void> {
  return deviceAccess(ctx, "gpu_direct").join(ctx.stamp, buf, (all, device) => {
    device.reduce(op, [all[root]], all);
  });
}
