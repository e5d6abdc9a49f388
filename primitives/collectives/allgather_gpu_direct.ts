import type { DeviceView } from "../../kernels/gpu_kernels.ts";
import type { CollectiveContext } from "./context.ts";
import { deviceAccess, sub } from "./_device.ts";
import type { DeviceAlgorithm } from "./algorithm.ts";

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

/** allgather `gpu_direct` (see {@linkcode allgatherGpuDirect}). */
export const ALLGATHER_GPU_DIRECT: DeviceAlgorithm<"allgather"> = {
  name: "gpu_direct",
  collective: "allgather",
  needs: "device",
  run: allgatherGpuDirect,
  // Direct access moves each byte across memory once: ahead of every other at every size.
  winsBelow: () => Infinity,
};
