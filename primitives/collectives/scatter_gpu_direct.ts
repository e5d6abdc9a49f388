import type { DeviceView } from "../../kernels/gpu_kernels.ts";
import type { CollectiveContext } from "./context.ts";
import { deviceAccess, sub } from "./_device.ts";
import type { DeviceAlgorithm } from "./algorithm.ts";

/** Direct device scatter (`gpu` only): block r of the root's send copied into rank r's recv. */
export function scatterGpuDirect(
  ctx: CollectiveContext,
  send: DeviceView,
  recv: DeviceView,
  root: number,
): Promise<void> {
  return deviceAccess(ctx, "gpu_direct").join(ctx.stamp, { send, recv }, (all, device) => {
    const n = recv.length;
    all.forEach((a, r) => device.copy(sub(all[root].send, r * n, (r + 1) * n), a.recv));
  });
}

/** scatter `gpu_direct` (see {@linkcode scatterGpuDirect}). */
export const SCATTER_GPU_DIRECT: DeviceAlgorithm<"scatter"> = {
  name: "gpu_direct",
  collective: "scatter",
  needs: "device",
  run: scatterGpuDirect,
  // Direct access moves each byte across memory once: ahead of every other at every size.
  winsBelow: () => Infinity,
};
