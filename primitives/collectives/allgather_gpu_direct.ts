import type { DeviceView } from "../../kernels/gpu_kernels.ts";
import type { CollectiveContext } from "./context.ts";
import { deviceAccess, sub } from "./_device.ts";

/** Direct device allgather (`gpu` only): every rank's block copied into every rank's result. */
export function allgatherGpuDirect(
  ctx: CollectiveContext,
  send: DeviceView,
  recv: DeviceView,
): Promise<void> {
  return deviceAccess(ctx, "gpu_direct").join(ctx.stamp, { send, recv }, (all, device) => {
    const n = send.length;
    for (const { recv } of all) {
      all.forEach((a, q) => device.copy(a.send, sub(recv, q * n, (q + 1) * n)));
    }
  });
}
