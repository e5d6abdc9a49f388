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
import { inputOf } from "./_counts.ts";

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

/**
 * Publishes `view` with the small `beside` (of one shape on every rank) and returns every rank's
 * view and `beside`: `view` travels in the eager slot within {@linkcode ONE_ARRIVAL_BYTES}, else
 * as a view of this rank's heap (of `view`'s copy where it is `recv` itself: in place). End the
 * call with {@linkcode doneReadingBeside}.
 */
export function exchangeBeside(
  ctx: CollectiveContext,
  shared: SharedAccess,
  view: TypedArray,
  beside: TypedArray,
  recv?: TypedArray,
): { views: TypedArray[]; besides: TypedArray[]; inSlot: boolean } {
  const inSlot = view.byteLength <= ONE_ARRIVAL_BYTES && shared.fitsSlot(view, beside);
  // In the slot, `view` is copied before any rank writes: in place it needs no copy of its own.
  const input = inSlot ? view : ctx.staged(recv ? inputOf(ctx, view, recv) : view, 2);
  const exchanged = shared.exchangeViewsBeside(input, beside, ctx.stamp, true, inSlot);
  requireViews(exchanged.views);
  return exchanged as { views: TypedArray[]; besides: TypedArray[]; inSlot: boolean };
}

/**
 * Ends a call begun by {@linkcode exchangeBeside}: unless every view came in its slot, waits until
 * every peer has read what it needed of this rank's heap.
 */
export function doneReadingBeside(
  ctx: CollectiveContext,
  shared: SharedAccess,
  exchanged: { inSlot: boolean },
): void {
  if (!exchanged.inSlot) shared.barrier(ctx.stamp);
}

/**
 * Room in scratch (slot 0) for a layout of the group's counts then displacements, Int32 (they
 * index a view in a heap or a slot, so they are below 2^31): what {@linkcode layoutOf} fills, and
 * the same shape for a rank whose layout nobody reads.
 */
export function layoutScratch(ctx: CollectiveContext): TypedArray {
  return ctx.scratch("i32", 2 * ctx.size, 0);
}

/** `counts` then `displs`, in {@linkcode layoutScratch}: a layout to exchange beside a view. */
export function layoutOf(
  ctx: CollectiveContext,
  counts: ArrayLike<number>,
  displs: ArrayLike<number>,
): TypedArray {
  const size = counts.length, where = layoutScratch(ctx);
  for (let q = 0; q < size; q++) {
    where[q] = counts[q];
    where[size + q] = displs[q];
  }
  return where;
}

/** `views` itself, asserting that each one is readable (was staged into its heap). */
export function requireViews(views: (TypedArray | undefined)[]): TypedArray[] {
  for (let r = 0; r < views.length; r++) {
    if (!views[r]) {
      throw new Error(`Internal error: rank ${r} did not stage its buffer into its heap`);
    }
  }
  return views as TypedArray[];
}

/** `dst = slots[0] op slots[1] op …` in rank order, so every rank computes identical bits. */
export function reduceSlots(op: KernelOp, dst: TypedArray, slots: TypedArray[]): void {
  if (slots.length === 1) return copy(dst, slots[0]);
  reduce(op, dst, slots[0], slots[1]);
  for (let r = 2; r < slots.length; r++) reduce(op, dst, dst, slots[r]);
}
