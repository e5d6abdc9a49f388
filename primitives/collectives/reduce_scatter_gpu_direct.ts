import type { DeviceView } from "../../kernels/gpu_kernels.ts";
import type { KernelOp } from "../types.ts";
import type { CollectiveContext } from "./context.ts";
import { deviceAccess, sub } from "./_device.ts";
import type { DeviceAlgorithm } from "./algorithm.ts";

/** Direct device reduce-scatter (`gpu` only): rank r's result reads block r of every rank once. */
export function reduceScatterGpuDirect(
  ctx: CollectiveContext,
  send: DeviceView,
  recv: DeviceView,
  op: KernelOp,
): Promise<void> {
  return deviceAccess(ctx, "gpu_direct").join(ctx.stamp, { send, recv }, (all, device) => {
    const n = recv.length;
    all.forEach(({ recv }, r) =>
      device.reduce(op, [recv], all.map((a) => sub(a.send, r * n, (r + 1) * n)))
    );
  });
}

/** reduceScatter `gpu_direct` (see {@linkcode reduceScatterGpuDirect}). */
export const REDUCE_SCATTER_GPU_DIRECT: DeviceAlgorithm<"reduceScatter"> = {
  name: "gpu_direct",
  collective: "reduceScatter",
  needs: "device",
  run: reduceScatterGpuDirect,
  // Direct access moves each byte across memory once: ahead of every other at every size.
  winsBelow: () => Infinity,
};
