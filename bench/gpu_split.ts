/**
 * A device allreduce split into its parts, the same way in any runtime (a browser tab's WebGPU,
 * Deno's): the upload (every rank's input written from the host, to completion), the kernel (one
 * reduce dispatch that reads every rank's input and writes every rank's output, as `gpu_direct`
 * records it, to completion) and the readback (one rank's output read to the host, `mapAsync`).
 * Each part is the median of its repetitions; an awaited completion's floor (an idle queue) is
 * beside them, since every part includes one.
 * @module
 */

import { GpuBuffer } from "../core.ts";
import type { GpuDevice } from "../internal.ts";

/** One size's split, µs. */
export interface GpuSplit {
  count: number;
  ranks: number;
  upload_us: number;
  kernel_us: number;
  readback_us: number;
  /** An awaited completion of an idle queue, µs. */
  floor_us: number;
}

/** The median, µs, of `reps` runs of `body` (each ending at its completion). */
async function median(body: () => Promise<void>, reps: number): Promise<number> {
  await body(); // pipelines, staging and fresh memory
  const times: number[] = [];
  for (let i = 0; i < reps; i++) {
    const start = performance.now();
    await body();
    times.push((performance.now() - start) * 1e3);
  }
  return times.sort((a, b) => a - b)[Math.floor(reps / 2)];
}

/** The split of an f32 allreduce of `count` elements over `ranks` logical ranks on `gpu`. */
export async function gpuSplit(
  gpu: GpuDevice,
  { count, ranks, reps = 9 }: { count: number; ranks: number; reps?: number },
): Promise<GpuSplit> {
  const host = new Float32Array(count).fill(1);
  const ins = Array.from({ length: ranks }, () => GpuBuffer.alloc(gpu, "f32", count));
  const outs = Array.from({ length: ranks }, () => GpuBuffer.alloc(gpu, "f32", count));
  try {
    const floor_us = await median(() => gpu.synchronize(), reps);
    const upload_us = await median(async () => {
      for (const b of ins) await b.write(host);
      await gpu.synchronize();
    }, reps);
    const kernel_us = await median(async () => {
      gpu.kernels.reduce(gpu.encoder(), "sum", outs, ins);
      await gpu.synchronize();
    }, reps);
    const readback_us = await median(() => outs[0].read(host), reps);
    if (host[0] !== ranks || host[count - 1] !== ranks) {
      throw new Error(`the device allreduce of ${count} floats is wrong: ${host[0]}, not ${ranks}`);
    }
    return { count, ranks, upload_us, kernel_us, readback_us, floor_us };
  } finally {
    for (const b of [...ins, ...outs]) b.destroy();
  }
}
