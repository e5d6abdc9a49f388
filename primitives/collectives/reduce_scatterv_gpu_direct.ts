import type { DeviceView } from "../../kernels/gpu_kernels.ts";
import type { KernelOp } from "../types.ts";
import { requireAgreed } from "./_counts.ts";
import type { CollectiveContext } from "./context.ts";
import { blockView, deviceAccess } from "./_device.ts";
import type { DeviceAlgorithm } from "./algorithm.ts";
import type { Layout } from "./spec.ts";

/**
 * Direct device reduce-scatterv (`gpu` only): rank r's result reads block r of every rank's send
 * once, each by its own rank's layout; a rank whose count of block r differs from rank r's is a
 * MismatchError naming both, before anything is recorded.
 */
export function reduceScattervGpuDirect(
  ctx: CollectiveContext,
  send: DeviceView,
  recv: DeviceView,
  op: KernelOp,
  layout: Layout,
): Promise<void> {
  const access = deviceAccess(ctx, "gpu_direct");
  return access.join(ctx.stamp, { send, recv, layout }, (all, device) => {
    all.forEach((a, r) =>
      all.forEach((from, j) =>
        requireAgreed("reduceScatterv", r, a.recv.length, j, from.layout.recvCounts[r])
      )
    );
    all.forEach((a, r) =>
      device.reduce(
        op,
        [a.recv],
        all.map((from) => blockView(from.send, from.layout.recvCounts, from.layout.recvDispls, r)),
      )
    );
  });
}

/** reduceScatterv `gpu_direct` (see {@linkcode reduceScattervGpuDirect}). */
export const REDUCE_SCATTERV_GPU_DIRECT: DeviceAlgorithm<"reduceScatterv"> = {
  name: "gpu_direct",
  collective: "reduceScatterv",
  needs: "device",
  run: reduceScattervGpuDirect,
  // Direct access moves each byte across memory once: ahead of every other at every size.
  winsBelow: () => Infinity,
};
