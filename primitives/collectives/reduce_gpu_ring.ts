import type { DeviceView } from "../../kernels/gpu_kernels.ts";
import type { KernelOp } from "../types.ts";
import type { CollectiveContext } from "./context.ts";
import { deviceAccess, wrap } from "./_device.ts";
import type { DeviceAlgorithm } from "./algorithm.ts";

/**
 * Device chain reduce (`gpu` only), NCCL's ring reduce on one device: a partial result starts at
 * the rank after the root and travels around the ring, each rank adding its input (in scratch,
 * so non-roots' buffers stay unchanged), until the root adds its input to it into its output.
 * N−1 steps.
 */
export function reduceGpuRing(
  ctx: CollectiveContext,
  input: DeviceView,
  output: DeviceView,
  op: KernelOp,
  root: number,
): Promise<void> {
  return deviceAccess(ctx, "gpu_ring").join(ctx.stamp, { input, output }, (all, device) => {
    const n = all.length;
    const at = (hop: number) => wrap(root + hop, n);
    let partial = all[at(n - 1)].input;
    for (let hop = n - 2; hop >= 1; hop--) {
      const next = device.scratch(at(hop), partial.dtype, partial.length);
      device.copy(partial, next);
      device.reduce(op, [next], [all[at(hop)].input], true);
      partial = next;
    }
    device.reduce(op, [all[root].output], [all[root].input, partial]);
  });
}

/** reduce `gpu_ring` (see {@linkcode reduceGpuRing}). */
export const REDUCE_GPU_RING: DeviceAlgorithm<"reduce"> = {
  name: "gpu_ring",
  collective: "reduce",
  needs: "device",
  run: reduceGpuRing,
};
