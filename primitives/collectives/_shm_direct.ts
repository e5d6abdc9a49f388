/**
 * Helpers of the direct shared-memory algorithms (`shm_direct`): ranks read each other's heaps
 * instead of sending messages, so a large buffer crosses memory once.
 * @module
 */

import { reduce } from "../../kernels/reduce.ts";
import { copy } from "../../kernels/copy.ts";
import type { SharedAccess } from "../transports/transport.ts";
import type { KernelOp, TypedArray } from "../types.ts";
import type { CollectiveContext } from "./context.ts";

/**
 * Up to this many bytes of a rank's send buffer, a small collective runs in one arrival through
 * the eager slots: two copies beat a second arrival up to 4 KiB, and lose to it from 8 KiB
 * (docs/results/2026-12-07-small.md).
 */
export const ONE_ARRIVAL_BYTES = 4 * 1024;

/** The transport's shared-memory access; throws when the transport has none. */
export function sharedAccess(ctx: CollectiveContext, algorithm: string): SharedAccess {
  const shared = ctx.transport.shared;
  if (!shared) {
    throw new TypeError(
      `Algorithm ${algorithm} needs shared memory between ranks; transport ${ctx.transport.name} ` +
        `has none (use it with transport shm)`,
    );
  }
  return shared;
}

/**
 * Every rank's `send`, for a collective that reads its peers' send buffers: through the eager
 * slots within {@linkcode ONE_ARRIVAL_BYTES}, else as views of their heaps. End the call with
 * {@linkcode doneReading}.
 */
export function readSends(
  ctx: CollectiveContext,
  shared: SharedAccess,
  send: TypedArray,
): TypedArray[] {
  return send.byteLength <= ONE_ARRIVAL_BYTES
    ? shared.eagerExchange(send, ctx.stamp)
    : requireViews(shared.exchangeViews(ctx.staged(send, 2), ctx.stamp));
}

/**
 * Ends a call begun by {@linkcode readSends}: where peers read this rank's heap, waits until every
 * one has (the eager slots stay valid until the next-but-one arrival, so those need no wait).
 */
export function doneReading(ctx: CollectiveContext, shared: SharedAccess, send: TypedArray): void {
  if (send.byteLength > ONE_ARRIVAL_BYTES) shared.barrier(ctx.stamp);
}

/** Every rank's view, asserting that each one is readable (was staged into its heap). */
export function requireViews(views: (TypedArray | undefined)[]): TypedArray[] {
  return views.map((v, r) => {
    if (!v) throw new Error(`Internal error: rank ${r} did not stage its buffer into its heap`);
    return v;
  });
}

/** `dst = slots[0] op slots[1] op …` in rank order, so every rank computes identical bits. */
export function reduceSlots(op: KernelOp, dst: TypedArray, slots: TypedArray[]): void {
  if (slots.length === 1) return copy(dst, slots[0]);
  reduce(op, dst, slots[0], slots[1]);
  for (let r = 2; r < slots.length; r++) reduce(op, dst, dst, slots[r]);
}
