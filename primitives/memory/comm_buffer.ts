/**
 * A buffer a collective can use: its memory kind, dtype and length, and async `read`/`write`
 * that work whatever the kind (host kinds copy at once; device kinds stage). Each kind is a
 * subclass: `HostBuffer` (`host`, `shared`) here, `GpuBuffer` and `ManagedBuffer` beside it.
 * @module
 */

import { type Dtype, dtypeOf, type MemoryKind, type TypedArray } from "../types.ts";

/** What allocated a buffer: one rank's memory (`Communicator.alloc`). */
export interface BufferOwner {
  /** The rank whose communicator allocated it. */
  readonly rank: number | undefined;
}

/**
 * The rank memory that allocated each buffer (and every window of it): a communicator takes only
 * its own rank's buffers. Buffers made by hand have none, and any rank may use them.
 */
const OWNERS = new WeakMap<CommBuffer, BufferOwner>();

/** Who allocated `buf`, if a rank's memory did. */
export function ownerOf(buf: CommBuffer): BufferOwner | undefined {
  return OWNERS.get(buf);
}

/** Marks `buf` as allocated by `owner`; returns it. */
export function owned<B extends CommBuffer>(buf: B, owner: BufferOwner | undefined): B {
  if (owner) OWNERS.set(buf, owner);
  return buf;
}

/** A typed buffer that knows where its bytes live. */
export abstract class CommBuffer {
  /** Where the bytes live. */
  abstract readonly memory: MemoryKind;
  /** Element type. */
  abstract readonly dtype: Dtype;
  /** Number of elements. */
  abstract readonly length: number;
  /** A buffer over elements `[start, end)` of this one, sharing its memory. */
  abstract subarray(start: number, end?: number): CommBuffer;
  /** Copies `into.length` elements from element `offset` on into `into`. */
  abstract read(into: TypedArray, offset?: number): Promise<void>;
  /** Copies `from` into this buffer from element `offset` on. */
  abstract write(from: TypedArray, offset?: number): Promise<void>;
}

/**
 * A buffer in host memory: `host` (a private ArrayBuffer, pageable memory) or `shared` (the
 * rank's heap: zero-copy between `shm` ranks, like pinned memory). Its bytes are `view`.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { HostBuffer } from "./comm_buffer.ts";
 *
 * // What comm.alloc(4, { memory: "host" }) returns; a plain typed array wraps the same way.
 * const buf = new HostBuffer(new Float32Array(4));
 * await buf.write(Float32Array.of(1, 2, 3, 4));
 * const out = new Float32Array(2);
 * await buf.read(out, 2);
 * assertEquals(out, Float32Array.of(3, 4));
 * ```
 */
export class HostBuffer<T extends TypedArray = TypedArray> extends CommBuffer {
  /** `host` or `shared`. */
  readonly memory: "host" | "shared";
  /** The bytes. */
  readonly view: T;
  /** Element type of the view (looked up once: every call reads it several times). */
  readonly dtype: Dtype;

  /** Wraps a view; `memory` defaults to `shared` for SharedArrayBuffer views, else `host`. */
  constructor(view: T, memory?: "host" | "shared") {
    super();
    this.view = view;
    this.dtype = dtypeOf(view);
    this.memory = memory ?? (view.buffer instanceof SharedArrayBuffer ? "shared" : "host");
  }

  /** Elements in the view. */
  get length(): number {
    return this.view.length;
  }

  /** A buffer over elements `[start, end)` of the same memory. */
  subarray(start: number, end?: number): HostBuffer<T> {
    return windowOf(this, new HostBuffer(this.view.subarray(start, end) as T, this.memory));
  }

  /** Copies elements from `offset` on into `into` (at once). */
  read(into: TypedArray, offset?: number): Promise<void> {
    offset ??= 0;
    into.set(this.view.subarray(offset, offset + into.length));
    return Promise.resolve();
  }

  /** Copies `from` in at element `offset` (at once). */
  write(from: TypedArray, offset?: number): Promise<void> {
    offset ??= 0;
    this.view.set(from, offset);
    return Promise.resolve();
  }
}

/** `window`, a window of `buf`, owned as `buf` is. */
export function windowOf<B extends CommBuffer>(buf: CommBuffer, window: B): B {
  return owned(window, ownerOf(buf));
}

/** Anything a collective accepts as a buffer. */
export type BufferLike = CommBuffer | TypedArray;

/** The CommBuffer of a buffer-like value. */
export function asCommBuffer(buf: BufferLike): CommBuffer {
  return buf instanceof CommBuffer ? buf : new HostBuffer(buf);
}
