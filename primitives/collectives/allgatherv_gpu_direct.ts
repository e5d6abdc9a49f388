import type { DeviceView } from "../../kernels/gpu_kernels.ts";
import { requireAgreed } from "./_counts.ts";
import type { CollectiveContext } from "./context.ts";
import { blockView, deviceAccess } from "./_device.ts";
import type { DeviceAlgorithm } from "./algorithm.ts";
import type { Layout } from "./spec.ts";

/**
 * Direct device allgatherv (`gpu` only): every rank's send copied into its block of every rank's
 * recv (in place, a rank's own block stays where it is). A rank whose count of another's block
 * differs from that block's length is a MismatchError naming both, before anything is recorded.
 */
export function allgathervGpuDirect(
  ctx: CollectiveContext,
  send: DeviceView,
  recv: DeviceView,
  layout: Layout,
): Promise<void> {
  const access = deviceAccess(ctx, "gpu_direct");
  return access.join(ctx.stamp, { send, recv, layout }, (all, device) => {
    all.forEach((to, j) =>
      all.forEach((from, r) =>
        requireAgreed("allgatherv", j, to.layout.recvCounts[r], r, from.send.length)
      )
    );
    all.forEach((to) =>
      all.forEach((from, r) =>
        device.copy(from.send, blockView(to.recv, to.layout.recvCounts, to.layout.recvDispls, r))
      )
    );
  });
}

/** allgatherv `gpu_direct` (see {@linkcode allgathervGpuDirect}). */
export const ALLGATHERV_GPU_DIRECT: DeviceAlgorithm<"allgatherv"> = {
  name: "gpu_direct",
  collective: "allgatherv",
  needs: "device",
  run: allgathervGpuDirect,
  // Direct access moves each byte across memory once: ahead of every other at every size.
  winsBelow: () => Infinity,
};
