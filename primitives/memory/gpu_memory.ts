/**
 * `gpu` memory: a window of a device buffer (STORAGE | COPY_SRC | COPY_DST) on the rank's device,
 * like `cudaMalloc`: no host view; `read` and `write` stage through the device's reusable
 * staging buffers in pieces.
 * @module
 */

import type { DeviceView } from "../../kernels/gpu_kernels.ts";
import { type Dtype, DTYPE_INFO, type TypedArray } from "../types.ts";
import { CommBuffer, windowOf } from "./comm_buffer.ts";
import type { GpuDevice } from "./gpu_device.ts";

/**
 * Elements of a device buffer.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { spawnRanks } from "../../core.ts";
 *
 * // examples/device_rank.ts writes rank + 1 into comm.alloc(n, { memory: "gpu" }), allreduces it
 * // and reads element 0 back; its group opens a device in every rank.
 * const module = new URL("../../examples/device_rank.ts", import.meta.url);
 * assertEquals(await spawnRanks<number>(module, { size: 2, gpu: true, args: "gpu" }), [3, 3]);
 * ```
 */
export class GpuBuffer extends CommBuffer implements DeviceView {
  /** Always `gpu`. */
  readonly memory = "gpu" as const;
  /** The device it lives on. */
  readonly gpu: GpuDevice;
  /** The device buffer. */
  readonly buffer: GPUBuffer;
  /** Identifies `buffer` in the kernels' caches. */
  readonly id: number;
  /** Where this window starts in `buffer`. */
  readonly byteOffset: number;
  /** Element type. */
  readonly dtype: Dtype;
  /** Elements in this window. */
  readonly length: number;

  /** A window of `length` × `dtype` at `byteOffset` of an allocation of `gpu`. */
  constructor(
    gpu: GpuDevice,
    allocation: { buffer: GPUBuffer; id: number },
    byteOffset: number,
    dtype: Dtype,
    length: number,
  ) {
    super();
    this.gpu = gpu;
    this.buffer = allocation.buffer;
    this.id = allocation.id;
    this.byteOffset = byteOffset;
    this.dtype = dtype;
    this.length = length;
  }

  /** Allocates `count` zeroed elements on `gpu`. */
  static alloc(gpu: GpuDevice, dtype: Dtype, count: number): GpuBuffer {
    return new GpuBuffer(gpu, gpu.createBuffer(count * DTYPE_INFO[dtype].bytes), 0, dtype, count);
  }

  /** Elements `[start, end)` of this window. */
  subarray(start: number, end?: number): GpuBuffer {
    end ??= this.length;
    const s = clamp(start, this.length), e = Math.max(s, clamp(end, this.length));
    const bytes = DTYPE_INFO[this.dtype].bytes;
    const offset = this.byteOffset + s * bytes;
    return windowOf(this, new GpuBuffer(this.gpu, this, offset, this.dtype, e - s));
  }

  /** Reads elements from `offset` on into `into`, after all work enqueued before. */
  read(into: TypedArray, offset?: number): Promise<void> {
    offset ??= 0;
    return this.gpu.read(
      this.buffer,
      this.byteOffset + offset * DTYPE_INFO[this.dtype].bytes,
      into,
    );
  }

  /** Writes `from` at element `offset`; work enqueued before sees the old contents. */
  write(from: TypedArray, offset?: number): Promise<void> {
    offset ??= 0;
    this.gpu.write(this.buffer, this.byteOffset + offset * DTYPE_INFO[this.dtype].bytes, from);
    return Promise.resolve();
  }

  /**
   * Frees the device memory (every window of this allocation) once the work recorded so far,
   * which may still use it, is submitted.
   */
  destroy(): void {
    this.gpu.retire(this.buffer);
  }
}

/** `i` within `[0, length]`, negative counting from the end (as `TypedArray.subarray`). */
function clamp(i: number, length: number): number {
  return Math.min(length, Math.max(0, i < 0 ? length + i : i));
}
