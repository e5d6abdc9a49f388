/**
 * The transport contract: ordered, tagged point-to-point byte messages between ranks, and nothing
 * about collectives (gloo's transport/algorithm split).
 * @module
 */

import type { MemoryKind, TransportName, TypedArray } from "../types.ts";

/**
 * Moves bytes between two ranks. Messages from one peer with one tag arrive in the order they
 * were sent. `send` and `recv` post their request before they first yield, so
 * `Promise.all([send(...), recv(...)])` between two ranks never deadlocks, whatever the size.
 * A receive whose length differs from the message rejects with a `MismatchError`.
 */
export interface Transport {
  /** Registry name. */
  readonly name: TransportName;
  /** This rank. */
  readonly rank: number;
  /** Number of ranks. */
  readonly size: number;
  /** Sends `data` to `peer`; resolves when `data` may be reused. */
  send(peer: number, data: Uint8Array, tag: number): Promise<void>;
  /** Receives the next message from `peer` with `tag` into `into`, which must be its exact length. */
  recv(peer: number, into: Uint8Array, tag: number): Promise<void>;
  /** Direct access to peers' heaps, when ranks share memory (`shm`). */
  readonly shared?: SharedAccess;
  /** Makes every pending and future operation reject: `failedRank` died or threw. */
  abort(failedRank: number, reason: string): void;
  /** Releases the transport's resources; resolves once peers have been told (if they must be). */
  close(): void | Promise<void>;
}

/**
 * What a shared-memory transport offers direct algorithms: every rank can see every other rank's
 * heap. Calls are collective (every rank makes the same calls in the same order) and blocking.
 */
export interface SharedAccess {
  /**
   * Publishes `view` and returns every rank's published view, indexed by rank, once all ranks have
   * published; `undefined` for ranks whose view is not in their heap. Throws `MismatchError` when
   * dtypes or lengths differ between ranks; `what` names the call in that message.
   */
  exchangeViews(view: TypedArray, what: string): (TypedArray | undefined)[];
  /**
   * Copies `view` (at most {@linkcode eagerBytes}) into this rank's eager slot and returns every
   * rank's slot once all have arrived. Slots stay valid until the next-but-one call.
   */
  eagerExchange(view: TypedArray, what: string): TypedArray[];
  /** Largest payload of {@linkcode eagerExchange}. */
  readonly eagerBytes: number;
  /** Blocks until every rank has arrived. */
  barrier(): void;
}

/** Memory kinds each transport carries directly (NCCL's `canConnect`). */
export const TRANSPORT_MEMORY: Readonly<Record<TransportName, readonly MemoryKind[]>> = {
  shm: ["host", "shared"],
  worker: ["host", "shared"],
  ws: ["host", "shared"],
  gpu: ["gpu", "managed"],
};

/** The bytes of a typed array, without copying. */
export function bytesOf(view: ArrayBufferView): Uint8Array {
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}
