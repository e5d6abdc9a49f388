import type { DeviceView } from "../../kernels/gpu_kernels.ts";
import type { KernelOp } from "../types.ts";
import type { CollectiveContext } from "./context.ts";
import { alignedPart, deviceAccess, wrap } from "./_device.ts";
import type { DeviceAlgorithm } from "./algorithm.ts";

/**
 * Device ring allreduce (`gpu` only), NCCL's ring on one device: N−1 reduce-scatter steps, each a
 * copy of one chunk to the right neighbour's scratch and a kernel adding it into the neighbour's
 * chunk, then N−1 allgather steps of copies. 2(N−1) steps, each rank moving 2(N−1)/N of the
 * buffer, like the message ring.
 */
export function allreduceGpuRing(
  ctx: CollectiveContext,
  input: DeviceView,
  output: DeviceView,
  op: KernelOp,
): Promise<void> {
  return deviceAccess(ctx, "gpu_ring").join(ctx.stamp, { input, output }, (all, device) => {
    const n = all.length;
    for (const { input, output } of all) device.copy(input, output);
    const chunk = (r: number, i: number) => alignedPart(all[r].output, n, i);
    for (let step = 0; step < n - 1; step++) {
      // Copies first, then the kernels: no rank adds into the chunk it sends in this step.
      const moves = all.map((_, r) => {
        const i = wrap(r - step, n), right = wrap(r + 1, n);
        const from = chunk(r, i);
        const scratch = device.scratch(right, from.dtype, from.length);
        device.copy(from, scratch);
        return { into: chunk(right, i), scratch };
      });
      for (const m of moves) device.reduce(op, [m.into], [m.scratch], true);
    }
    for (let step = 0; step < n - 1; step++) {
      for (let r = 0; r < n; r++) {
        const i = wrap(r + 1 - step, n);
        device.copy(chunk(r, i), chunk(wrap(r + 1, n), i));
      }
    }
  });
}

/** allreduce `gpu_ring` (see {@linkcode allreduceGpuRing}). */
export const ALLREDUCE_GPU_RING: DeviceAlgorithm<"allreduce"> = {
  name: "gpu_ring",
  collective: "allreduce",
  needs: "device",
  run: allreduceGpuRing,
};
