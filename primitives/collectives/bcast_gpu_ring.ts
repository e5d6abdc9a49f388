import type { DeviceView } from "../../kernels/gpu_kernels.ts";
import type { CollectiveContext } from "./context.ts";
import { deviceAccess, wrap } from "./_device.ts";
import type { DeviceAlgorithm } from "./algorithm.ts";

/**
 * Device chain broadcast (`gpu` only), NCCL's ring broadcast on one device: the root's buffer
 * passes from rank to rank around the ring, N−1 copies each reading the one before.
 */
export function bcastGpuRing(ctx: CollectiveContext, buf: DeviceView, root: number): Promise<void> {
  return deviceAccess(ctx, "gpu_ring").join(ctx.stamp, buf, (all, device) => {
    for (let hop = 1; hop < all.length; hop++) {
      device.copy(all[wrap(root + hop - 1, all.length)], all[wrap(root + hop, all.length)]);
    }
  });
}

/** bcast `gpu_ring` (see {@linkcode bcastGpuRing}). */
export const BCAST_GPU_RING: DeviceAlgorithm<"bcast"> = {
  name: "gpu_ring",
  collective: "bcast",
  needs: "device",
  run: bcastGpuRing,
};
