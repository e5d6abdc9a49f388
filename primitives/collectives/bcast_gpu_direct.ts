import type { DeviceView } from "../../kernels/gpu_kernels.ts";
import type { CollectiveContext } from "./context.ts";
import { deviceAccess } from "./_device.ts";
import type { DeviceAlgorithm } from "./algorithm.ts";

/** Direct device broadcast (`gpu` only): the root's buffer copied into every other rank's. */
export function bcastGpuDirect(
  ctx: CollectiveContext,
  buf: DeviceView,
  root: number,
): Promise<void> {
  return deviceAccess(ctx, "gpu_direct").join(ctx.stamp, buf, (all, device) => {
    all.forEach((b, r) => r !== root && device.copy(all[root], b));
  });
}

/** bcast `gpu_direct` (see {@linkcode bcastGpuDirect}). */
export const BCAST_GPU_DIRECT: DeviceAlgorithm<"bcast"> = {
  name: "gpu_direct",
  collective: "bcast",
  needs: "device",
  run: bcastGpuDirect,
  // Direct access moves each byte across memory once: ahead of every other at every size.
  winsBelow: () => Infinity,
};
