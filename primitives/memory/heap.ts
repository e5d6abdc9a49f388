/**
 * A rank's heap: one shared, growable WebAssembly.Memory that holds the rank's `shared` buffers,
 * bounce buffers and scratch. Living in WebAssembly memory lets the SIMD kernels reduce them in
 * place, and being shared lets peers on the `shm` transport read them directly. Large `host`
 * buffers get a private WebAssembly.Memory each ({@linkcode privateView}), for the kernels too.
 * @module
 */

import { memoryOf, registerMemoryBuffer } from "../../kernels/memory_owners.ts";
import { type Dtype, DTYPE_INFO, makeView, type TypedArray } from "../types.ts";

export { memoryOf };

const PAGE = 65536;
/** One page short of 4 GiB so that `offset + bytes` never wraps a 32-bit address. */
const MAX_PAGES = 65535;
/** Largest heap a rank can have, bytes. */
export const HEAP_MAX_BYTES: number = MAX_PAGES * PAGE;
const ALIGN = 64;

/**
 * Creates the shared memory behind a heap; launchers make one per rank and hand it to every rank.
 * It starts at `initialPages` 64 KiB pages (16 when not given) and grows as buffers need.
 */
export function createHeapMemory(initialPages?: number): WebAssembly.Memory {
  return new WebAssembly.Memory({ initial: initialPages ?? 16, maximum: MAX_PAGES, shared: true });
}

/**
 * Where a rank's thread and its progress thread allocate in the heap they share (each its own
 * allocator): user buffers below, the progress thread's scratch above (3 GiB and 1 GiB).
 */
export const PROGRESS_SCRATCH_FROM: number = 49152 * PAGE;

/** The part of a heap memory one allocator hands out. */
export interface HeapRegion {
  /** Its first byte. @default {0} */
  from?: number;
  /** Its end. @default {HEAP_MAX_BYTES} */
  to?: number;
}

/**
 * First-fit allocator over a rank's heap memory, or a region of it. Single-threaded: only its
 * rank allocates (a rank and its progress thread each in a region of their own).
 */
export class RankHeap {
  /** The shared memory; peers hold the same object. */
  readonly memory: WebAssembly.Memory;
  readonly #end: number;
  #free: { offset: number; bytes: number }[] = [];
  #used = new Map<number, number>();
  #top: number;
  /** End of the highest buffer ever handed out: memory above it is still as grown, all zeros. */
  #highWater: number;

  /** Wraps a heap memory created by {@linkcode createHeapMemory} (the part `region` says). */
  constructor(memory: WebAssembly.Memory, region?: HeapRegion) {
    this.memory = memory;
    // Offset 0 stays unused so that 0 never names a buffer.
    this.#top = this.#highWater = Math.max(ALIGN, region?.from ?? 0);
    this.#end = region?.to ?? MAX_PAGES * PAGE;
  }

  /** Bytes the heap can still grow to hold. */
  get capacity(): number {
    return this.#end - this.#top + this.#free.reduce((s, b) => s + b.bytes, 0);
  }

  /** Allocates `count` elements of `dtype`, zero-filled. Throws `RangeError` when the heap is full. */
  alloc(dtype: Dtype, count: number): TypedArray {
    const bytes = Math.max(ALIGN, Math.ceil((count * DTYPE_INFO[dtype].bytes) / ALIGN) * ALIGN);
    const offset = this.#take(bytes);
    this.#used.set(offset, bytes);
    const view = makeView(dtype, heapBuffer(this.memory), offset, count);
    // Only reused bytes need zeroing: touching fresh pages would fault them all in up front
    // (seconds for a 1 GiB buffer), long before the buffer is used.
    if (offset < this.#highWater) {
      view.fill(0, 0, Math.ceil((this.#highWater - offset) / DTYPE_INFO[dtype].bytes));
    }
    this.#highWater = Math.max(this.#highWater, offset + bytes);
    return view;
  }

  /** Returns a buffer from {@linkcode alloc} to the heap. */
  free(view: ArrayBufferView): void {
    const bytes = this.#used.get(view.byteOffset);
    if (bytes === undefined) return;
    this.#used.delete(view.byteOffset);
    this.#free.push({ offset: view.byteOffset, bytes });
    this.#free.sort((a, b) => a.offset - b.offset);
    this.#coalesce();
  }

  /** Whether a view's bytes live in this heap. */
  owns(view: ArrayBufferView): boolean {
    return memoryOf(view.buffer) === this.memory;
  }

  #take(bytes: number): number {
    const i = this.#free.findIndex((b) => b.bytes >= bytes);
    if (i >= 0) {
      const block = this.#free[i];
      const offset = block.offset;
      if (block.bytes === bytes) this.#free.splice(i, 1);
      else this.#free[i] = { offset: offset + bytes, bytes: block.bytes - bytes };
      return offset;
    }
    const offset = this.#top;
    const end = offset + bytes;
    if (end > this.#end) {
      throw new RangeError(
        `Cannot allocate ${bytes} bytes: the rank heap holds at most ${this.#end} bytes ` +
          `and ${this.capacity} are free`,
      );
    }
    const have = heapBuffer(this.memory).byteLength;
    if (end > have) this.memory.grow(Math.ceil((end - have) / PAGE));
    this.#top = end;
    return offset;
  }

  #coalesce(): void {
    const merged: { offset: number; bytes: number }[] = [];
    for (const b of this.#free) {
      const last = merged.at(-1);
      if (last && last.offset + last.bytes === b.offset) last.bytes += b.bytes;
      else merged.push({ ...b });
    }
    const last = merged.at(-1);
    if (last && last.offset + last.bytes === this.#top) {
      this.#top = last.offset;
      merged.pop();
    }
    this.#free = merged;
  }
}

/**
 * The current SharedArrayBuffer of a heap memory. A grown memory hands out a new, longer buffer
 * object over the same bytes; fetching through here remembers every one of them so that
 * {@linkcode memoryOf} recognises views made before a growth.
 */
export function heapBuffer(memory: WebAssembly.Memory): SharedArrayBuffer {
  const buffer = memory.buffer as unknown as SharedArrayBuffer;
  registerMemoryBuffer(buffer, memory);
  return buffer;
}

/**
 * A zero-filled view of `count` × `dtype` over a private WebAssembly.Memory of its own, sized to
 * fit and never grown: its buffer is a plain fixed-length ArrayBuffer (JS reads it as fast as any;
 * a resizable one, which a growing memory would need, is slower to read: docs/memory.md) that the
 * SIMD kernels take too, and the garbage collector frees with the view. Undefined when no memory
 * that large can be made.
 */
export function privateView(dtype: Dtype, count: number): TypedArray | undefined {
  const pages = Math.max(1, Math.ceil((count * DTYPE_INFO[dtype].bytes) / PAGE));
  if (pages > MAX_PAGES) return undefined;
  let memory: WebAssembly.Memory;
  try {
    memory = new WebAssembly.Memory({ initial: pages, maximum: pages });
  } catch (e) {
    if (e instanceof RangeError) return undefined; // out of memory or address space
    throw e;
  }
  registerMemoryBuffer(memory.buffer, memory);
  return makeView(dtype, memory.buffer, 0, count);
}
