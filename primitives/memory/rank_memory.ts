/**
 * A rank's allocators: one per memory kind the rank has. `host` buffers are private
 * ArrayBuffers, `shared` ones live in the rank's heap; `gpu` and `managed` ones need the rank's
 * WebGPU device, which a launcher opens when asked (`{ gpu: true }`).
 * @module
 */

import { type CommBuffer, HostBuffer } from "./comm_buffer.ts";
import type { RankHeap } from "./heap.ts";
import { type Dtype, DTYPE_INFO, type MemoryKind } from "../types.ts";

/** Allocates and frees a rank's buffers of every kind it has. */
export class RankMemory {
  /** The rank's heap (`shared` buffers, scratch, staging). */
  readonly heap: RankHeap;

  constructor(heap: RankHeap) {
    this.heap = heap;
  }

  /** A zero-filled buffer of `count` × `dtype` of `kind`. */
  alloc(kind: MemoryKind, dtype: Dtype, count: number): CommBuffer {
    switch (kind) {
      case "host":
        return new HostBuffer(new DTYPE_INFO[dtype].array(count), "host");
      case "shared":
        return new HostBuffer(this.heap.alloc(dtype, count), "shared");
      default:
        throw new TypeError(
          `Cannot allocate ${kind} memory: this rank has no WebGPU device (start the group with ` +
            `{ gpu: true })`,
        );
    }
  }

  /** Returns a buffer's memory (heap buffers to the heap; the rest to the garbage collector). */
  free(buf: CommBuffer): void {
    if (buf instanceof HostBuffer && buf.memory === "shared") this.heap.free(buf.view);
  }
}
