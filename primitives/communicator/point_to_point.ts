/**
 * A communicator's sends and receives: posted in the order this rank issued them per tag
 * (issue_order.ts), directly from host buffers, through the device transport's own messages for
 * device buffers, and through host memory for device buffers over a host transport (as MPI
 * without CUDA-aware transports). Every message carries its dtype's stamp; a receive into another
 * dtype is a mismatch. A send or receive whose buffer overlaps a call in flight that writes it
 * (or, for a receive, reads it) is posted once that call has finished (in_flight.ts).
 * @module
 */

import type { CallLog } from "./call_log.ts";
import type { RunnerHooks } from "./collective_runner.ts";
import { MismatchError } from "../errors.ts";
import { type Entry, type InFlight, type Use, useOf } from "./in_flight.ts";
import { IssueOrder } from "./issue_order.ts";
import { type CommBuffer, HostBuffer } from "../memory/comm_buffer.ts";
import type { RankMemory } from "../memory/rank_memory.ts";
import { DEVICE, HOST } from "./operands.ts";
import { callStamp } from "./stamp.ts";
import { bytesOf, type Transport } from "../transports/transport.ts";
import {
  DONE,
  type Dtype,
  DTYPE_INFO,
  dtypeOf,
  DTYPES,
  type Side,
  type TypedArray,
} from "../types.ts";

/** Stamps of point-to-point messages: only the dtype is checked (lengths are, by the transport). */
const P2P_STAMPS = Object.fromEntries(
  DTYPES.map((dtype) => [dtype, callStamp("p2p", dtype, 0, "sum", 0, 0)]),
) as Record<Dtype, number>;

/** One communicator's point-to-point messages. */
export class PointToPoint {
  readonly #transport: Transport;
  readonly #memory: RankMemory;
  readonly #calls: CallLog;
  readonly #hooks: RunnerHooks;
  readonly #inFlight: InFlight;
  /** The order sends and receives are posted in, by tag. */
  readonly #sends = new IssueOrder();
  readonly #recvs = new IssueOrder();
  /**
   * Downloads of device buffers being sent over a host transport. A staged receive waits for
   * them before it may block: on a blocking transport a receive blocks the thread, and a download
   * needs the event loop.
   */
  readonly #stagedReads = new Set<Promise<void>>();
  /** Host areas of staged device messages, free for reuse. */
  readonly #stagingFree: TypedArray[] = [];

  /**
   * Messages over `transport` from and into `memory`, judged by `calls`; `inFlight` holds the
   * communicator's calls in flight (collectives too).
   */
  constructor(
    transport: Transport,
    memory: RankMemory,
    { calls, hooks, inFlight }: { calls: CallLog; hooks: RunnerHooks; inFlight: InFlight },
  ) {
    this.#transport = transport;
    this.#memory = memory;
    this.#calls = calls;
    this.#hooks = hooks;
    this.#inFlight = inFlight;
  }

  /** Sends checked `buf` (used on `side`) to `peer` with `tag`. */
  send(buf: CommBuffer, peer: number, tag: number, side: Side): Promise<void> {
    const stamp = P2P_STAMPS[buf.dtype];
    const device = side === "device" ? this.#transport.device : undefined;
    const uses = [useOf(buf, false)];
    const wait = this.#inFlight.before(uses);
    if (side === "host" && buf instanceof HostBuffer && this.#sends.free(tag) && !wait) {
      const sent = this.#transport.send(peer, bytesOf(buf.view), tag, stamp);
      return sent === DONE ? DONE : this.#settled(sent, this.#inFlight.enter(uses));
    }
    return this.#inTurn(this.#sends, tag, uses, wait, async () => {
      if (device) {
        return device.send(peer, await DEVICE.operand(buf, false), tag, stamp);
      }
      if (side === "host") {
        const view = await HOST.operand(buf, false);
        return this.#transport.send(peer, bytesOf(view), tag, stamp);
      }
      // A device buffer over a host transport: the send is posted once the download is in.
      const host = this.#stagingBuffer(buf);
      const read = buf.read(host);
      this.#stagedReads.add(read);
      try {
        await read;
      } finally {
        this.#stagedReads.delete(read);
      }
      return this.#transport.send(peer, bytesOf(host), tag, stamp)
        .finally(() => this.#stagingFree.push(host));
    });
  }

  /**
   * Receives the next message with `tag` from `peer` (or any other rank) into checked `buf` (used
   * on `side`); resolves with the sender.
   */
  recv(buf: CommBuffer, peer: number | "any", tag: number, side: Side): Promise<number> {
    const device = side === "device" ? this.#transport.device : undefined;
    const check = (stamp: number, from: number) => this.#checkDtype(buf.dtype, stamp, from, tag);
    const uses = [useOf(buf, true)];
    const wait = this.#inFlight.before(uses);
    const direct = side === "host" && buf instanceof HostBuffer && this.#recvs.free(tag) && !wait;
    if (peer !== "any" && direct) {
      const from = peer;
      const received = this.#transport.recv(from, bytesOf(buf.view), tag)
        .then((stamp) => check(stamp, from));
      return this.#settled(received, this.#inFlight.enter(uses));
    }
    return this.#inTurn(this.#recvs, tag, uses, wait, async () => {
      const { rank, size } = this.#transport;
      const from = peer === "any"
        ? await (device ?? this.#transport).probe(
          Array.from({ length: size - 1 }, (_, i) => i < rank ? i : i + 1),
          tag,
        )
        : peer;
      if (device) {
        const into = await DEVICE.operand(buf, true);
        return device.recv(from, into, tag).then((stamp) => check(stamp, from));
      }
      if (side === "host") {
        const view = await HOST.operand(buf, true);
        return this.#transport.recv(from, bytesOf(view), tag).then((stamp) => check(stamp, from));
      }
      // Sends of this moment (a sendrecv's) download first (see #stagedReads).
      await null;
      await Promise.all(this.#stagedReads);
      const host = this.#stagingBuffer(buf);
      return this.#transport.recv(from, bytesOf(host), tag)
        .then(async (stamp) => {
          await buf.write(host);
          return check(stamp, from);
        })
        .finally(() => this.#stagingFree.push(host));
    });
  }

  /**
   * Runs `post` (which posts a send or receive on `uses`) once the calls with `tag` issued before
   * it in `order` have posted theirs and what it waits for (`wait`: in_flight.ts) has; in flight
   * on `uses` from now until it completes.
   */
  async #inTurn<T>(
    order: IssueOrder,
    tag: number,
    uses: Use[],
    wait: Promise<void> | undefined,
    post: () => Promise<T>,
  ): Promise<T> {
    const entry = this.#inFlight.enter(uses);
    const turn = order.claim(tag);
    const begun = wait && this.#inFlight.park();
    let posted: Promise<T>;
    try {
      await turn.ready;
      if (wait) await wait;
      this.#hooks.checkOpen();
      posted = post();
    } catch (e) {
      this.#inFlight.leave(entry);
      turn.release();
      throw this.#hooks.broke(e);
    } finally {
      begun?.();
    }
    turn.release();
    return await this.#settled(posted, entry);
  }

  /** An operation in flight as `entry` until it settles; its failure breaks the communicator. */
  #settled<T>(op: Promise<T>, entry: Entry): Promise<T> {
    return op.then((value) => {
      this.#inFlight.leave(entry);
      return value;
    }, (e) => {
      this.#inFlight.leave(entry);
      throw this.#hooks.broke(e);
    });
  }

  /** The sender of a message whose `stamp` says its dtype matches `dtype`. */
  #checkDtype(dtype: Dtype, stamp: number, peer: number, tag: number): number {
    if (stamp === P2P_STAMPS[dtype]) return peer;
    throw new MismatchError(
      `Rank ${this.#transport.rank} received ${this.#calls.describe(stamp)} from rank ${peer} ` +
        `(tag ${tag}) into ${dtype}: sender and receiver must use the same dtype`,
      { failedRank: peer },
    );
  }

  /**
   * A host area in the heap for a device buffer sent or received over a host transport: a free
   * one large enough, or a new one (each in-flight message has its own).
   */
  #stagingBuffer(buf: CommBuffer): TypedArray {
    const bytes = buf.length * DTYPE_INFO[buf.dtype].bytes;
    const i = this.#stagingFree.findIndex((h) => h.byteLength >= bytes && dtypeOf(h) === buf.dtype);
    const host = i >= 0
      ? this.#stagingFree.splice(i, 1)[0]
      : this.#memory.heap.alloc(buf.dtype, buf.length);
    return host.subarray(0, buf.length) as TypedArray;
  }
}
