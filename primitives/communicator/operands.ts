/**
 * What algorithms work on: a call's buffers as host views or device buffers, on the side the call
 * runs (a managed buffer migrates there first), and the two things a call does to them itself (a
 * copy on one rank, avg's division), on each side.
 * @module
 */

import { copy } from "../../kernels/copy.ts";
import { divide } from "../../kernels/reduce.ts";
import { type CommBuffer, HostBuffer } from "../memory/comm_buffer.ts";
import { GpuBuffer } from "../memory/gpu_memory.ts";
import { ManagedBuffer } from "../memory/managed.ts";
import type { TypedArray } from "../types.ts";

/** How a call's operands of one side are made and treated. */
export interface OperandSide<B> {
  /** The operand of `buf` on this side; when `write`, the other side's copy goes stale. */
  operand(buf: CommBuffer, write: boolean): Promise<B>;
  /** Copies `src` into `dst` (a call on one rank). */
  copy(src: B, dst: B): void;
  /** `buf /= k` (avg). */
  divide(buf: B, k: number): void;
}

/** Host views: a host buffer's view, or a managed buffer's host copy. */
export const HOST: OperandSide<TypedArray> = {
  async operand(buf, write) {
    if (buf instanceof HostBuffer) return buf.view;
    if (buf instanceof ManagedBuffer) return (await buf.acquire("host", write)).view;
    throw new TypeError(`Cannot use ${buf.memory} memory on the host`);
  },
  copy(src, dst) {
    if (src !== dst) copy(dst, src);
  },
  divide,
};

/** Device buffers: a gpu buffer itself, or a managed buffer's device copy. */
export const DEVICE: OperandSide<GpuBuffer> = {
  async operand(buf, write) {
    if (buf instanceof GpuBuffer) return buf;
    if (buf instanceof ManagedBuffer) return await buf.acquire("device", write);
    throw new TypeError(`Cannot use ${buf.memory} memory on the device`);
  },
  copy(src, dst) {
    if (src !== dst) src.gpu.kernels.copy(src.gpu.encoder(), src, dst);
  },
  divide: (buf, k) => buf.gpu.kernels.scale(buf.gpu.encoder(), buf, k),
};

/**
 * The operands of `buffers` (each with whether the call writes it) on `side`; a buffer given
 * twice (in place) resolves once, written if either use writes it.
 */
export async function operandsOf<B>(
  side: OperandSide<B>,
  buffers: [CommBuffer, boolean][],
): Promise<B[]> {
  const ops: B[] = [];
  for (let i = 0; i < buffers.length; i++) {
    const buf = buffers[i][0];
    const first = buffers.findIndex(([b]) => b === buf);
    const write = buffers.some(([b, w]) => b === buf && w);
    ops.push(first < i ? ops[first] : await side.operand(buf, write));
  }
  return ops;
}
