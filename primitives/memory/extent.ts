/**
 * Where a buffer's bytes are: the memory they live in and their byte range there, so calls can
 * tell two operands that share bytes (in place, or a partial overlap they refuse) from two apart.
 * @module
 */

import type { CommBuffer, HostBuffer } from "./comm_buffer.ts";
import { GpuBuffer } from "./gpu_memory.ts";
import { ManagedBuffer } from "./managed.ts";
import { memoryOf } from "./heap.ts";
import { DTYPE_INFO } from "../types.ts";

/** The memory `buf`'s bytes live in: a WebAssembly.Memory, an ArrayBuffer or a GPUBuffer. */
function homeOf(buf: CommBuffer): object {
  if (buf instanceof ManagedBuffer) return homeOf(buf.host);
  if (buf instanceof GpuBuffer) return buf.buffer;
  const buffer = (buf as HostBuffer).view.buffer;
  // A heap's memory hands out a new buffer object each time it grows: compare memories.
  return memoryOf(buffer) ?? buffer;
}

/** Where `buf`'s bytes start in their memory. */
function startOf(buf: CommBuffer): number {
  if (buf instanceof ManagedBuffer) return startOf(buf.host);
  return buf instanceof GpuBuffer ? buf.byteOffset : (buf as HostBuffer).view.byteOffset;
}

/** Where a buffer's bytes are: their memory and `[start, end)` there, in bytes. */
export interface Extent {
  readonly home: object;
  readonly start: number;
  readonly end: number;
}

/** `buf`'s extent. */
export function extentOf(buf: CommBuffer): Extent {
  const start = startOf(buf);
  return { home: homeOf(buf), start, end: start + bytesIn(buf) };
}

/** Whether `a` and `b` share any byte. */
export function overlaps(a: CommBuffer, b: CommBuffer): boolean {
  if (homeOf(a) !== homeOf(b)) return false;
  const x = startOf(a), y = startOf(b);
  return x < y + bytesIn(b) && y < x + bytesIn(a);
}

/** Whether `a` and `b` are the same bytes. */
export function sameBytes(a: CommBuffer, b: CommBuffer): boolean {
  return homeOf(a) === homeOf(b) && startOf(a) === startOf(b) && bytesIn(a) === bytesIn(b);
}

/** Bytes of a buffer (what `auto` decides by). */
export function bytesIn(buf: CommBuffer): number {
  return buf.length * DTYPE_INFO[buf.dtype].bytes;
}
