/**
 * What algorithms work on: a call's buffers resolved to host views or device buffers on the side
 * the call runs (a managed buffer migrates there first), and the two things a call does to them
 * itself (a copy on one rank, avg's division).
 * @module
 */

import { copy } from "../../kernels/copy.ts";
import { divide } from "../../kernels/reduce.ts";
import type { Operand } from "../collectives/context.ts";
import { type CommBuffer, HostBuffer } from "../memory/comm_buffer.ts";
import { GpuBuffer } from "../memory/gpu.ts";
import { ManagedBuffer } from "../memory/managed.ts";
import type { Side, TypedArray } from "../types.ts";

/** A call's operands: input and output (the same for a bcast's one buffer). */
export type Operands = [Operand, Operand];

/**
 * The operands of `buffers` (each with whether the call writes it) on `side`; a buffer given
 * twice (in place) resolves once, written if either use writes it.
 */
export async function resolveOperands(
  buffers: [CommBuffer, boolean][],
  side: Side,
): Promise<Operands> {
  const ops = [] as unknown as Operands;
  for (let i = 0; i < buffers.length; i++) {
    const buf = buffers[i][0];
    const first = buffers.findIndex(([b]) => b === buf);
    const write = buffers.some(([b, w]) => b === buf && w);
    ops.push(first < i ? ops[first] : await resolveOperand(buf, side, write));
  }
  return ops;
}

/**
 * What an algorithm on `side` works on for `buf`: its host view, or its device buffer; a
 * managed buffer migrates there first (and, when `write`, its other side's copy goes stale).
 */
export async function resolveOperand(
  buf: CommBuffer,
  side: Side,
  write: boolean,
): Promise<TypedArray | GpuBuffer> {
  if (buf instanceof HostBuffer) return buf.view;
  if (buf instanceof GpuBuffer) return buf;
  if (buf instanceof ManagedBuffer) {
    return side === "host"
      ? (await buf.acquire("host", write)).view
      : await buf.acquire("device", write);
  }
  throw new TypeError(`Unknown buffer kind ${buf.memory}`);
}

/** Copies `src` into `dst`: host views at once, device buffers by a recorded copy. */
export function copyOperand(src: Operand, dst: Operand): void {
  if (src === dst) return;
  if (src instanceof GpuBuffer) {
    return src.gpu.kernels.copy(src.gpu.encoder(), src, dst as GpuBuffer);
  }
  copy(dst as TypedArray, src as TypedArray);
}

/** `buf /= k` (`avg`): host views at once, device buffers by a recorded kernel. */
export function divideOperand(buf: Operand, k: number): void {
  if (buf instanceof GpuBuffer) return buf.gpu.kernels.scale(buf.gpu.encoder(), buf, k);
  divide(buf as TypedArray, k);
}
