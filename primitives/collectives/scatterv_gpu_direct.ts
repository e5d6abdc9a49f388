import type { DeviceView } from "../../kernels/gpu_kernels.ts";
import { requireAgreed } from "./_counts.ts";
import type { CollectiveContext } from "./context.ts";
import { blockView, deviceAccess } from "./_device.ts";
import type { DeviceAlgorithm } from "./algorithm.ts";
import type { Layout } from "./spec.ts";

/**
 * Direct device scatterv (`gpu` only): block r of the root's send, by the root's layout, copied
 * into rank r's recv (in place, the root's own block stays where it is); a recv whose length
 * differs from the root's count for it is a MismatchError naming both.
 */
export function scattervGpuDirect(
  ctx: CollectiveContext,
  send: DeviceView,
  recv: DeviceView,
  root: number,
  layout: Layout,
): Promise<void> {
  const access = deviceAccess(ctx, "gpu_direct");
  return access.join(ctx.stamp, { send, recv, layout }, (all, device) => {
    const { send: whole, layout: { sendCounts, sendDispls } } = all[root];
    all.forEach((a, r) => requireAgreed("scatterv", r, a.recv.length, root, sendCounts[r]));
    all.forEach((a, r) => device.copy(blockView(whole, sendCounts, sendDispls, r), a.recv));
  });
}

/** scatterv `gpu_direct` (see {@linkcode scattervGpuDirect}). */
export const SCATTERV_GPU_DIRECT: DeviceAlgorithm<"scatterv"> = {
  name: "gpu_direct",
  collective: "scatterv",
  needs: "device",
  run: scattervGpuDirect,
  // Direct access moves each byte across memory once: ahead of every other at every size.
  winsBelow: () => Infinity,
};
