import type { DeviceView } from "../../kernels/gpu_kernels.ts";
import type { CollectiveContext } from "./context.ts";
import { deviceAccess, sub } from "./_device.ts";
import type { DeviceAlgorithm } from "./algorithm.ts";

/** Direct device all-to-all (`gpu` only): block j of rank i's send copied to block i of rank j's recv. */
export function alltoallGpuDirect(
  ctx: CollectiveContext,
  send: DeviceView,
  recv: DeviceView,
): Promise<void> {
  return deviceAccess(ctx, "gpu_direct").join(ctx.stamp, { send, recv }, (all, device) => {
    const n = send.length / all.length;
    all.forEach((from, i) =>
      all.forEach((to, j) =>
        device.copy(sub(from.send, j * n, (j + 1) * n), sub(to.recv, i * n, (i + 1) * n))
      )
    );
  });
}

/** alltoall `gpu_direct` (see {@linkcode alltoallGpuDirect}). */
export const ALLTOALL_GPU_DIRECT: DeviceAlgorithm<"alltoall"> = {
  name: "gpu_direct",
  collective: "alltoall",
  needs: "device",
  run: alltoallGpuDirect,
  // Direct access moves each byte across memory once: ahead of every other at every size.
  winsBelow: () => Infinity,
};
