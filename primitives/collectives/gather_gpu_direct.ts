import type { DeviceView } from "../../kernels/gpu_kernels.ts";
import type { CollectiveContext } from "./context.ts";
import { deviceAccess, sub } from "./_device.ts";
import type { DeviceAlgorithm } from "./algorithm.ts";

/** Direct device gather (`gpu` only): every rank's send copied into its block of the root's recv. */
export function gatherGpuDirect(
  ctx: CollectiveContext,
  send: DeviceView,
  recv: DeviceView,
  root: number,
): Promise<void> {
  return deviceAccess(ctx, "gpu_direct").join(ctx.stamp, { send, recv }, (all, device) => {
    const n = send.length;
    all.forEach((a, r) => device.copy(a.send, sub(all[root].recv, r * n, (r + 1) * n)));
  });
}

/** gather `gpu_direct` (see {@linkcode gatherGpuDirect}). */
export const GATHER_GPU_DIRECT: DeviceAlgorithm<"gather"> = {
  name: "gpu_direct",
  collective: "gather",
  needs: "device",
  run: gatherGpuDirect,
  // Direct access moves each byte across memory once: ahead of every other at every size.
  winsBelow: () => Infinity,
};
