import type { DeviceView } from "../../kernels/gpu_kernels.ts";
import type { CollectiveContext } from "./context.ts";
import { deviceAccess, sub, wrap } from "./_device.ts";
import type { DeviceAlgorithm } from "./algorithm.ts";

/**
 * Device ring allgather (`gpu` only): each rank's block enters its own result, then N−1 steps each
 * pass one block to the right neighbour, as the message ring does.
 */
export function allgatherGpuRing(
  ctx: CollectiveContext,
  send: DeviceView,
  recv: DeviceView,
): Promise<void> {
  return deviceAccess(ctx, "gpu_ring").join(ctx.stamp, { send, recv }, (all, device) => {
    const size = all.length, n = send.length;
    const block = (r: number, q: number) => sub(all[r].recv, q * n, (q + 1) * n);
    all.forEach((a, r) => device.copy(a.send, block(r, r)));
    for (let step = 0; step < size - 1; step++) {
      for (let r = 0; r < size; r++) {
        const q = wrap(r - step, size);
        device.copy(block(r, q), block(wrap(r + 1, size), q));
      }
    }
  });
}

/** allgather `gpu_ring` (see {@linkcode allgatherGpuRing}). */
export const ALLGATHER_GPU_RING: DeviceAlgorithm<"allgather"> = {
  name: "gpu_ring",
  collective: "allgather",
  needs: "device",
  run: allgatherGpuRing,
};
