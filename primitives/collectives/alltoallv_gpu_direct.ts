import type { DeviceView } from "../../kernels/gpu_kernels.ts";
import { requireAgreed } from "./_counts.ts";
import type { CollectiveContext } from "./context.ts";
import { blockView, deviceAccess } from "./_device.ts";
import type { DeviceAlgorithm } from "./algorithm.ts";
import type { Layout } from "./spec.ts";

/**
 * Direct device alltoallv (`gpu` only): block j of rank i's send copied to block i of rank j's
 * recv, each by its own rank's layout. In place a rank's buffer is copied to its scratch first,
 * so that no block is overwritten before it is sent. Every count is checked against its sender's
 * before anything is recorded: a MismatchError names both ranks.
 */
export function alltoallvGpuDirect(
  ctx: CollectiveContext,
  send: DeviceView,
  recv: DeviceView,
  layout: Layout,
): Promise<void> {
  const access = deviceAccess(ctx, "gpu_direct");
  return access.join(ctx.stamp, { send, recv, layout }, (all, device) => {
    all.forEach((to, j) =>
      all.forEach((from, i) =>
        requireAgreed("alltoallv", j, to.layout.recvCounts[i], i, from.layout.sendCounts[j])
      )
    );
    const sources = all.map((a, i) => {
      if (a.send.buffer !== a.recv.buffer) return a.send;
      const copy = device.scratch(i, a.send.dtype, a.send.length);
      device.copy(a.send, copy);
      return copy;
    });
    all.forEach((to, j) =>
      all.forEach((from, i) => {
        const { sendCounts, sendDispls } = from.layout, { recvCounts, recvDispls } = to.layout;
        device.copy(
          blockView(sources[i], sendCounts, sendDispls, j),
          blockView(to.recv, recvCounts, recvDispls, i),
        );
      })
    );
  });
}

/** alltoallv `gpu_direct` (see {@linkcode alltoallvGpuDirect}). */
export const ALLTOALLV_GPU_DIRECT: DeviceAlgorithm<"alltoallv"> = {
  name: "gpu_direct",
  collective: "alltoallv",
  needs: "device",
  run: alltoallvGpuDirect,
  // Direct access moves each byte across memory once: ahead of every other at every size.
  winsBelow: () => Infinity,
};
