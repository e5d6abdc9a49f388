/**
 * What every algorithm is written against: the transport, reusable scratch
 * and the tag of the current call. Algorithms never learn which transport they run on.
 * @module
 */

import type { DeviceView } from "../../kernels/gpu_kernels.ts";
import { copy } from "../../kernels/copy.ts";
import { reduce } from "../../kernels/reduce.ts";
import type { CommBuffer } from "../memory/comm_buffer.ts";
import type { RankHeap } from "../memory/heap.ts";
import { bytesOf, type Transport } from "../transports/transport.ts";
import {
  DONE,
  type Dtype,
  DTYPE_INFO,
  dtypeOf,
  type KernelOp,
  makeView,
  type TypedArray,
} from "../types.ts";

/** Per-rank state shared by all collective calls of one communicator. */
export class CollectiveContext {
  /** This rank. */
  readonly rank: number;
  /** Number of ranks. */
  readonly size: number;
  /** Tag of the collective call in progress (unique per call, equal on every rank). */
  tag = 0;
  /** Stamp of the call in progress (communicator/stamp.ts): what every message and arrival carries. */
  stamp = 0;
  #scratch: (Uint8Array | undefined)[] = [];
  /**
   * The last view of each scratch slot, handed out again while a call repeats, with its shape
   * (cheaper to compare than a view's own length and dtype).
   */
  #views: ({ view: TypedArray; dtype: Dtype; count: number } | undefined)[] = [];
  /** Contexts over parts of the group (see {@linkcode CollectiveContext.over}). */
  #parts = new Map<Transport, CollectiveContext>();

  /**
   * Binds a transport, the rank's heap and the registry's pick of host algorithms (what staging
   * and the hierarchical algorithms run inside).
   */
  constructor(
    readonly transport: Transport,
    readonly heap: RankHeap,
    readonly pickHost: HostAlgorithmPicker,
  ) {
    this.rank = transport.rank;
    this.size = transport.size;
  }

  /**
   * Sends a typed array to `peer` under the current tag and stamp. The promise is marked handled:
   * an algorithm that stops at its first failed operation leaves the others unawaited, and their
   * rejections must not crash the rank (the failure already reached the caller).
   */
  send(peer: number, view: TypedArray): Promise<void> {
    return handled(this.transport.send(peer, bytesOf(view), this.tag, this.stamp));
  }

  /** Receives exactly `view.length` elements from `peer` under the current tag (handled, as `send`). */
  recv(peer: number, view: TypedArray): Promise<unknown> {
    return handled(this.transport.recv(peer, bytesOf(view), this.tag));
  }

  /**
   * Sends `view` to `to` and receives `into` from `from` (MPI_Sendrecv). Both are posted before
   * it yields, so partners that exchange this way never deadlock, whatever the size.
   */
  sendrecv(to: number, view: TypedArray, from: number, into: TypedArray): Promise<unknown> {
    const sent = this.send(to, view);
    const received = this.recv(from, into);
    return sent === DONE ? received : Promise.all([sent, received]);
  }

  /**
   * A context over `transport`, a part of the group (a hierarchical group's host or channel:
   * `HierarchyAccess`), carrying this call's tag and stamp, with scratch of its own.
   */
  over(transport: Transport): CollectiveContext {
    let part = this.#parts.get(transport);
    if (!part) {
      this.#parts.set(transport, part = new CollectiveContext(transport, this.heap, this.pickHost));
    }
    part.tag = this.tag;
    part.stamp = this.stamp;
    return part;
  }

  /**
   * `dst = a op b`: what every message algorithm reduces with, so that a simulated transport
   * charges it to the rank's virtual clock (and skips it where the operands are phantom).
   */
  reduce(op: KernelOp, dst: TypedArray, a: TypedArray, b: TypedArray): void {
    if (this.transport.simulated?.reduce(dst, a, b)) return;
    reduce(op, dst, a, b);
  }

  /** `dst = dst op src`. */
  reduceInto(op: KernelOp, dst: TypedArray, src: TypedArray): void {
    this.reduce(op, dst, dst, src);
  }

  /**
   * A heap-backed scratch array of `count` elements, reused across calls (no allocation in the
   * steady state). Different `slot`s never overlap; the same slot is overwritten by the next call.
   */
  scratch(dtype: Dtype, count: number, slot?: number): TypedArray {
    slot ??= 0;
    const bytes = count * DTYPE_INFO[dtype].bytes;
    let region = this.#scratch[slot];
    if (!region || region.byteLength < bytes) {
      if (region) this.heap.free(region);
      const grown = Math.max(bytes, (region?.byteLength ?? 0) * 2, 4096);
      const f = this.heap.alloc("f64", Math.ceil(grown / 8));
      region = this.#scratch[slot] = new Uint8Array(f.buffer, f.byteOffset, f.byteLength);
      this.#views[slot] = undefined;
    }
    const last = this.#views[slot];
    if (last?.count === count && last.dtype === dtype) return last.view;
    const view = makeView(dtype, region.buffer, region.byteOffset, count);
    this.#views[slot] = { view, dtype, count };
    return view;
  }

  /** `src` itself when it lives in this rank's heap, else a scratch copy (a bounce buffer). */
  staged(src: TypedArray, slot: number): TypedArray {
    if (this.heap.owns(src)) return src;
    const copy = this.scratch(dtypeOf(src), src.length, slot);
    copy.set(src);
    return copy;
  }
}

function ignore(): void {}

/** `p`, with a rejection handler attached so that leaving it unawaited is not an error. */
function handled<T>(p: Promise<T>): Promise<T> {
  if (p !== DONE) p.catch(ignore); // DONE never rejects
  return p;
}

/** `[start, end)` of part `i` when `count` elements are split into `parts` near-equal parts. */
export function chunk(count: number, parts: number, i: number): [number, number] {
  return [Math.floor((i * count) / parts), Math.floor(((i + 1) * count) / parts)];
}

/** A view of part `i` of `view` split into `parts`. */
export function part(view: TypedArray, parts: number, i: number): TypedArray {
  const [s, e] = chunk(view.length, parts, i);
  return view.subarray(s, e);
}

/**
 * `view` cut into consecutive segments of `bytes` (whole elements, the last one short), at least
 * one even when `view` is empty: the pieces a pipelined algorithm posts one after another.
 */
export function segmentsOf(view: TypedArray, bytes: number): TypedArray[] {
  const per = Math.max(1, Math.floor(bytes / view.BYTES_PER_ELEMENT));
  const out: TypedArray[] = [];
  for (let s = 0; s < view.length || s === 0; s += per) out.push(view.subarray(s, s + per));
  return out;
}

/** `(a mod n)` in `[0, n)`. */
export function mod(a: number, n: number): number {
  return ((a % n) + n) % n;
}

/**
 * What an algorithm returns: a promise when it waits for messages, nothing when it ran to the end
 * synchronously (the shared-memory algorithms), which spares small calls a microtask turn.
 */
export type Completion = Promise<void> | void;

/**
 * What an algorithm works on: host views (host-memory algorithms), device views (device
 * algorithms) or buffers (staging algorithms), as its registry entry's `needs` says.
 */
export type Operand = TypedArray | DeviceView | CommBuffer;

/**
 * A collective that works in place on `buf` (the message algorithms' allreduce and reduce) as one
 * taking `input` and `output`: it copies input into output first (on a reduce's non-roots
 * `output` is `input`, so nothing is copied there).
 */
export function viaOutput<Rest extends unknown[]>(
  run: (ctx: CollectiveContext, buf: TypedArray, ...rest: Rest) => Promise<void>,
): (ctx: CollectiveContext, input: TypedArray, output: TypedArray, ...rest: Rest) => Completion {
  return (ctx, input, output, ...rest) => {
    if (output !== input) copy(output, input);
    return run(ctx, output, ...rest);
  };
}

/**
 * The host algorithm `auto` picks for a collective (by name) on `bytes` over `ctx`'s group, as
 * on a one-level group: what staging runs on the host and the hierarchical algorithms over
 * channels (`hostAlgorithm` in collective_table.ts types it by the collective's signature). The
 * communicator hands the registry's in (the registry lists these algorithms).
 */
export type HostAlgorithmPicker = (
  ctx: CollectiveContext,
  collective: string,
  bytes: number,
) => unknown;
