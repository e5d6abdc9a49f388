import type { DeviceView } from "../../kernels/gpu_kernels.ts";
import type { KernelOp } from "../types.ts";
import type { CollectiveContext } from "./context.ts";
import { deviceAccess, sub, wrap } from "./_device.ts";
import type { DeviceAlgorithm } from "./algorithm.ts";

/**
 * Device ring reduce-scatter (`gpu` only): each rank works on a scratch copy of its send buffer
 * (which stays unchanged); N−1 steps each copy one block to the right neighbour and add it there,
 * started so that rank r ends with block r, which lands in its result.
 */
export function reduceScatterGpuRing(
  ctx: CollectiveContext,
  send: DeviceView,
  recv: DeviceView,
  op: KernelOp,
): Promise<void> {
  return deviceAccess(ctx, "gpu_ring").join(ctx.stamp, { send, recv }, (all, device) => {
    const size = all.length, n = recv.length;
    const work = all.map((a, r) => {
      const w = device.scratch(r, a.send.dtype, a.send.length, 1);
      device.copy(a.send, w);
      return w;
    });
    const block = (r: number, q: number) => sub(work[r], q * n, (q + 1) * n);
    for (let step = 0; step < size - 1; step++) {
      const moves = all.map((_, r) => {
        const q = wrap(r - step - 1, size), right = wrap(r + 1, size);
        const scratch = device.scratch(right, recv.dtype, n);
        device.copy(block(r, q), scratch);
        return { into: block(right, q), scratch };
      });
      for (const m of moves) device.reduce(op, [m.into], [m.scratch], true);
    }
    all.forEach((a, r) => device.copy(block(r, r), a.recv));
  });
}

/** reduceScatter `gpu_ring` (see {@linkcode reduceScatterGpuRing}). */
export const REDUCE_SCATTER_GPU_RING: DeviceAlgorithm<"reduceScatter"> = {
  name: "gpu_ring",
  collective: "reduceScatter",
  needs: "device",
  run: reduceScatterGpuRing,
};
