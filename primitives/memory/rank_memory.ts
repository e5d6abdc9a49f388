/**
 * A rank's allocators: one per memory kind the rank has. `host` buffers are private
 * ArrayBuffers (a large one over a WebAssembly.Memory of its own, so the SIMD kernels reduce it),
 * `shared` ones live in the rank's heap; `gpu` and `managed` ones need the rank's WebGPU device,
 * which a launcher opens when asked (`{ gpu: true }`).
 * @module
 */

import { wgslType } from "../../kernels/gpu_kernels.ts";
import { type BufferOwner, type CommBuffer, HostBuffer, owned } from "./comm_buffer.ts";
import { GpuBuffer } from "./gpu_memory.ts";
import type { GpuDevice } from "./gpu_device.ts";
import { privateView, type RankHeap } from "./heap.ts";
import { ManagedBuffer, type MigrationCount } from "./managed.ts";
import { type Dtype, DTYPE_INFO, type MemoryKind, type TypedArray } from "../types.ts";

/**
 * `host` buffers from this size up get a WebAssembly.Memory of their own (`privateView`), so their
 * reductions run the SIMD kernel; smaller ones stay plain arrays (a 64-KiB page would mostly go
 * unused, and short reductions run in JS anyway).
 */
const PRIVATE_MEMORY_MIN_BYTES = 64 * 1024;

/**
 * Where a rank's host buffers come from instead of its own memory (a simulated group's phantom
 * buffers, shared by its ranks: transports/sim.ts).
 */
export interface HostArena {
  /** A buffer of `count` × `dtype` for `rank`. */
  alloc(rank: number, dtype: Dtype, count: number): TypedArray;
  /** `rank` is done with `view`. */
  free(rank: number, view: ArrayBufferView): void;
}

/** Allocates and frees a rank's buffers of every kind it has. */
export class RankMemory implements BufferOwner {
  /** The rank whose communicator allocates from here (set by the communicator). */
  rank: number | undefined;
  /** The rank's heap (`shared` buffers, scratch, staging). */
  readonly heap: RankHeap;
  /** The rank's device, when it has one. */
  readonly gpu: GpuDevice | undefined;
  /** Migrations of every managed buffer of this rank. */
  readonly migrations: MigrationCount = { migrations: 0, bytes: 0 };

  /** Where host and shared buffers come from, when not from this rank's own memory. */
  readonly #arena: HostArena | undefined;

  /**
   * A rank's memory over `heap`, with its device `gpu` when it has one; host and shared buffers
   * come from `arena` when given.
   */
  constructor(heap: RankHeap, gpu?: GpuDevice, arena?: HostArena) {
    this.heap = heap;
    this.gpu = gpu;
    this.#arena = arena;
  }

  /** A zero-filled buffer of `count` × `dtype` of `kind`, owned by this memory. */
  alloc(kind: MemoryKind, dtype: Dtype, count: number): CommBuffer {
    return owned(this.#alloc(kind, dtype, count), this);
  }

  #alloc(kind: MemoryKind, dtype: Dtype, count: number): CommBuffer {
    if (this.#arena && (kind === "host" || kind === "shared")) {
      return new HostBuffer(this.#arena.alloc(this.rank ?? 0, dtype, count), kind);
    }
    switch (kind) {
      case "host": {
        const large = count * DTYPE_INFO[dtype].bytes >= PRIVATE_MEMORY_MIN_BYTES;
        const view = (large ? privateView(dtype, count) : undefined) ??
          new DTYPE_INFO[dtype].array(count);
        return new HostBuffer(view, "host");
      }
      case "shared":
        return new HostBuffer(this.heap.alloc(dtype, count), "shared");
      case "gpu":
        return GpuBuffer.alloc(this.#device(kind, dtype), dtype, count);
      case "managed":
        return ManagedBuffer.alloc(
          this.heap,
          this.#device(kind, dtype),
          dtype,
          count,
          this.migrations,
        );
    }
  }

  /** Returns a buffer's memory: heap buffers to the heap, device buffers to the device. */
  free(buf: CommBuffer): void {
    if (this.#arena && buf instanceof HostBuffer) this.#arena.free(this.rank ?? 0, buf.view);
    else if (buf instanceof HostBuffer && buf.memory === "shared") this.heap.free(buf.view);
    else if (buf instanceof GpuBuffer) buf.destroy();
    else if (buf instanceof ManagedBuffer) {
      this.heap.free(buf.host.view);
      buf.device.destroy();
    }
  }

  #device(kind: MemoryKind, dtype: Dtype): GpuDevice {
    if (!this.gpu) {
      throw new TypeError(
        `Cannot allocate ${kind} memory: this rank has no WebGPU device (start the group with ` +
          `{ gpu: true })`,
      );
    }
    wgslType(dtype); // refuses the dtypes device kernels do not take
    return this.gpu;
  }
}
