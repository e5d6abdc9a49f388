/**
 * A rank program on device memory: every rank writes rank + 1 into a buffer of `memory` (`gpu`,
 * or `managed`), allreduces it and returns the first element, 1 + 2 + … + size on every rank.
 * Its group needs a WebGPU device in every rank (`gpu: true`, or the `gpu` transport).
 * @module
 */

import type { Communicator, MemoryKind } from "../core.ts";

/** Allreduces rank + 1 on `memory` and returns the sum. */
export async function run(comm: Communicator, memory: MemoryKind = "gpu"): Promise<number> {
  const buf = comm.alloc(1 << 16, { memory });
  await buf.write(new Float32Array(buf.length).fill(comm.rank + 1));
  await comm.allreduce(buf);
  const out = new Float32Array(1);
  await buf.read(out); // waits for the device's work: calls on device buffers return once enqueued
  return out[0];
}
