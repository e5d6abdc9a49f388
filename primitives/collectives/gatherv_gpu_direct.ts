import type { DeviceView } from "../../kernels/gpu_kernels.ts";
import { requireAgreed } from "./_counts.ts";
import type { CollectiveContext } from "./context.ts";
import { blockView, deviceAccess } from "./_device.ts";
import type { DeviceAlgorithm } from "./algorithm.ts";
import type { Layout } from "./spec.ts";

/**
 * Direct device gatherv (`gpu` only): every rank's send copied into its block of the root's recv,
 * by the root's layout (in place, the root's own block stays where it is); a count the root has
 * that differs from its sender's length is a MismatchError naming both.
 */
export function gathervGpuDirect(
  ctx: CollectiveContext,
  send: DeviceView,
  recv: DeviceView,
  root: number,
  layout: Layout,
): Promise<void> {
  const access = deviceAccess(ctx, "gpu_direct");
  return access.join(ctx.stamp, { send, recv, layout }, (all, device) => {
    const { recv: whole, layout: { recvCounts, recvDispls } } = all[root];
    all.forEach((a, r) => requireAgreed("gatherv", root, recvCounts[r], r, a.send.length));
    all.forEach((a, r) => device.copy(a.send, blockView(whole, recvCounts, recvDispls, r)));
  });
}

/** gatherv `gpu_direct` (see {@linkcode gathervGpuDirect}). */
export const GATHERV_GPU_DIRECT: DeviceAlgorithm<"gatherv"> = {
  name: "gpu_direct",
  collective: "gatherv",
  needs: "device",
  run: gathervGpuDirect,
  // Direct access moves each byte across memory once: ahead of every other at every size.
  winsBelow: () => Infinity,
};
