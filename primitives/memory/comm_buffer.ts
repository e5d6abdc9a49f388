/**
 * A buffer a collective can use: its memory kind, dtype, length, and a host view.
 * `gpu` and `managed` buffers (device copies, staging) plug in here later.
 * @module
 */

import { type Dtype, dtypeOf, type MemoryKind, type TypedArray } from "../types.ts";

/** A typed buffer that knows where its bytes live. */
export class CommBuffer<T extends TypedArray = TypedArray> {
  /** Where the bytes live. */
  readonly memory: MemoryKind;
  /** The host view of the bytes. */
  readonly view: T;

  /** Wraps a view; `memory` defaults to `shared` for SharedArrayBuffer views, else `host`. */
  constructor(view: T, memory?: MemoryKind) {
    this.view = view;
    this.memory = memory ?? (view.buffer instanceof SharedArrayBuffer ? "shared" : "host");
  }

  /** Element type. */
  get dtype(): Dtype {
    return dtypeOf(this.view);
  }

  /** Number of elements. */
  get length(): number {
    return this.view.length;
  }
}

/** Anything a collective accepts as a buffer. */
export type BufferLike = CommBuffer | TypedArray;

/** The CommBuffer of a buffer-like value. */
export function asCommBuffer(buf: BufferLike): CommBuffer {
  return buf instanceof CommBuffer ? buf : new CommBuffer(buf);
}
