/**
 * `managed` memory, like `cudaMallocManaged`: one logical buffer with a host copy (in the rank's
 * heap) and a device copy. Validity is tracked per 64 KiB page on each side; acquiring a range for
 * one side migrates the pages the other side made newer, and writing on one side makes the other
 * side's copy of those pages stale. Every migration is counted, for the harness to report.
 * @module
 */

import { CommBuffer, HostBuffer, windowOf } from "./comm_buffer.ts";
import { GpuBuffer } from "./gpu_memory.ts";
import type { GpuDevice } from "./gpu_device.ts";
import type { RankHeap } from "./heap.ts";
import { type Dtype, DTYPE_INFO, type Side, type TypedArray } from "../types.ts";

/** Bytes of a page, the unit of migration. */
export const MANAGED_PAGE_BYTES = 64 * 1024;

/** Migrations of a rank's managed buffers. */
export interface MigrationCount {
  /** Runs of pages moved. */
  migrations: number;
  /** Bytes moved. */
  bytes: number;
}

/** The pages of one allocation, shared by every view of it. */
class Pages {
  readonly valid: Record<Side, Uint8Array>;
  constructor(readonly bytes: number, readonly counts: MigrationCount) {
    const pages = Math.ceil(bytes / MANAGED_PAGE_BYTES);
    this.valid = { host: new Uint8Array(pages).fill(1), device: new Uint8Array(pages).fill(1) };
  }
}

/**
 * A managed buffer (or a window of one).
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { spawnRanks } from "../../core.ts";
 *
 * // examples/device_rank.ts on managed memory: written on the host, reduced there (shm's
 * // algorithms run on the host copy), read back on the host.
 * const module = new URL("../../examples/device_rank.ts", import.meta.url);
 * const sums = await spawnRanks<number>(module, { size: 2, gpu: true, args: "managed" });
 * assertEquals(sums, [3, 3]);
 * ```
 */
export class ManagedBuffer extends CommBuffer {
  /** Always `managed`. */
  readonly memory = "managed" as const;
  /** The host copy of this window. */
  readonly host: HostBuffer;
  /** The device copy of this window. */
  readonly device: GpuBuffer;
  readonly #pages: Pages;
  /** Byte offset of this window in the allocation. */
  readonly #offset: number;

  private constructor(host: HostBuffer, device: GpuBuffer, pages: Pages, offset: number) {
    super();
    this.host = host;
    this.device = device;
    this.#pages = pages;
    this.#offset = offset;
  }

  /** Allocates `count` zeroed elements with a host copy in `heap` and a device copy on `gpu`. */
  static alloc(
    heap: RankHeap,
    gpu: GpuDevice,
    dtype: Dtype,
    count: number,
    counts: MigrationCount,
  ): ManagedBuffer {
    const host = new HostBuffer(heap.alloc(dtype, count), "shared");
    const device = GpuBuffer.alloc(gpu, dtype, count);
    return new ManagedBuffer(host, device, new Pages(count * DTYPE_INFO[dtype].bytes, counts), 0);
  }

  /** Element type. */
  get dtype(): Dtype {
    return this.host.dtype;
  }

  /** Elements in this window. */
  get length(): number {
    return this.host.length;
  }

  /** Elements `[start, end)` of this window, sharing pages and their state. */
  subarray(start: number, end?: number): ManagedBuffer {
    const host = this.host.subarray(start, end);
    const skipped = host.view.byteOffset - this.host.view.byteOffset;
    const first = skipped / DTYPE_INFO[this.dtype].bytes;
    const device = this.device.subarray(first, first + host.length);
    return windowOf(this, new ManagedBuffer(host, device, this.#pages, this.#offset + skipped));
  }

  /**
   * This window on `side`, migrating the pages the other side made newer; with `write`, the
   * other side's copy of those pages becomes stale (the caller is about to write them).
   */
  async acquire(side: "host", write?: boolean): Promise<HostBuffer>;
  /** This window on the device (see the host overload). */
  async acquire(side: "device", write?: boolean): Promise<GpuBuffer>;
  async acquire(side: Side, write?: boolean): Promise<HostBuffer | GpuBuffer> {
    write ??= false;
    await this.#migrate(side);
    if (write) this.#mark(side);
    return side === "host" ? this.host : this.device;
  }

  /** Migrates this window to `side` now, rather than at its first use there. */
  async prefetch(side: Side): Promise<void> {
    await this.#migrate(side);
  }

  /**
   * Writes this window on `side` without changing its values, as a program that touches the
   * buffer there does: the host writes one element per page, the device runs a pass over it. The
   * other side's copy becomes stale, so the next use there migrates it.
   */
  async touch(side: Side): Promise<void> {
    if (side === "host") {
      const view = (await this.acquire("host", true)).view;
      const step = MANAGED_PAGE_BYTES / DTYPE_INFO[this.dtype].bytes;
      // deno-lint-ignore no-self-assign -- a write that keeps the value is the point
      for (let i = 0; i < view.length; i += step) view[i] = view[i];
    } else {
      const device = await this.acquire("device", true);
      device.gpu.kernels.scale(device.gpu.encoder(), device, 1);
    }
  }

  /** Whether each side holds this window's current contents. */
  get state(): "host" | "device" | "both" {
    const [first, last] = this.#span();
    let host = true, device = true;
    for (let p = first; p < last; p++) {
      host &&= this.#pages.valid.host[p] === 1;
      device &&= this.#pages.valid.device[p] === 1;
    }
    return host && device ? "both" : host ? "host" : "device";
  }

  /** Reads from the host copy (migrating what the device made newer first). */
  async read(into: TypedArray, offset?: number): Promise<void> {
    offset ??= 0;
    await this.subarray(offset, offset + into.length).#migrate("host");
    into.set(this.host.view.subarray(offset, offset + into.length));
  }

  /** Writes into the host copy; the device copy of those pages becomes stale. */
  async write(from: TypedArray, offset?: number): Promise<void> {
    offset ??= 0;
    const range = this.subarray(offset, offset + from.length);
    await range.#migrate("host"); // pages the write covers only partly keep the device's data
    this.host.view.set(from, offset);
    range.#mark("host");
  }

  /** The pages this window covers: `[first, last)`. */
  #span(): [number, number] {
    const bytes = this.length * DTYPE_INFO[this.dtype].bytes;
    if (bytes === 0) return [0, 0];
    return [
      Math.floor(this.#offset / MANAGED_PAGE_BYTES),
      Math.ceil((this.#offset + bytes) / MANAGED_PAGE_BYTES),
    ];
  }

  /** Only `side` holds the current contents of this window's pages. */
  #mark(side: Side): void {
    const [first, last] = this.#span();
    this.#pages.valid[side].fill(1, first, last);
    this.#pages.valid[side === "host" ? "device" : "host"].fill(0, first, last);
  }

  /** Copies runs of pages that are stale on `side` from the other side. */
  async #migrate(side: Side): Promise<void> {
    const [first, last] = this.#span();
    const stale = this.#pages.valid[side];
    // The allocation as a whole: page runs may reach past this window.
    const bytesBefore = this.#offset;
    const root = this.#rootViews(bytesBefore);
    for (let p = first; p < last;) {
      if (stale[p]) {
        p++;
        continue;
      }
      let q = p;
      while (q < last && !stale[q]) q++;
      const start = p * MANAGED_PAGE_BYTES;
      const end = Math.min(q * MANAGED_PAGE_BYTES, this.#pages.bytes);
      const bytes = root.host.subarray(start, end);
      if (side === "host") await root.gpu.read(root.buffer, root.byteOffset + start, bytes);
      else root.gpu.write(root.buffer, root.byteOffset + start, bytes);
      stale.fill(1, p, q);
      this.#pages.counts.migrations++;
      this.#pages.counts.bytes += end - start;
      p = q;
    }
  }

  /** The allocation's host bytes and device buffer, from this window's position in it. */
  #rootViews(bytesBefore: number) {
    const view = this.host.view;
    const host = new Uint8Array(view.buffer, view.byteOffset - bytesBefore, this.#pages.bytes);
    const d = this.device;
    return { host, gpu: d.gpu, buffer: d.buffer, byteOffset: d.byteOffset - bytesBefore };
  }
}
