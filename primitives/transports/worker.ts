/**
 * The `worker` transport: Web Workers exchanging messages over a MessageChannel mesh with
 * postMessage. Messages are cut into segments so the receiver copies one while the next is in
 * flight. Small segments are structured-cloned; from {@linkcode TRANSFER_MIN_BYTES} on they are
 * copied once into a fresh ArrayBuffer that is transferred (measured crossover, see README).
 * @module
 */

import { CommTimeoutError, MismatchError, PeerFailedError } from "../errors.ts";
import type { Transport } from "./transport.ts";

/** Segment size of large messages. */
export const SEGMENT_BYTES = 4 * 1024 * 1024;
/** Segments at least this large are transferred instead of cloned. */
export const TRANSFER_MIN_BYTES = 256 * 1024;

interface Segment {
  tag: number;
  total: number;
  offset: number;
  data: Uint8Array;
}

interface PendingRecv {
  tag: number;
  into: Uint8Array;
  received: number;
  resolve: () => void;
  reject: (e: Error) => void;
}

interface Arrival {
  tag: number;
  data: Uint8Array;
  received: number;
  waiter?: PendingRecv;
}

/** Options of {@linkcode WorkerTransport}. */
export interface WorkerTransportOptions {
  /** Milliseconds a receive may go without data before it rejects. @default {30000} */
  timeoutMs?: number;
}

/** Message-passing transport between workers. `ports[p]` reaches rank p (undefined for self). */
export class WorkerTransport implements Transport {
  readonly name = "worker" as const;
  readonly rank: number;
  readonly size: number;
  #ports: (MessagePort | undefined)[];
  #posted: PendingRecv[][];
  #arrivals: Arrival[][];
  /** The message currently arriving from each peer. */
  #current: (Arrival | PendingRecv | undefined)[];
  #lastData: number[];
  #timeoutMs: number;
  #aborted?: Error;
  #watchdog: number;

  /** Connects over `ports`. */
  constructor(
    rank: number,
    ports: (MessagePort | undefined)[],
    options: WorkerTransportOptions = {},
  ) {
    this.rank = rank;
    this.size = ports.length;
    this.#ports = ports;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    // Array.from, not map: a rank's own entry may be a hole, which map would skip.
    this.#posted = Array.from(ports, () => []);
    this.#arrivals = Array.from(ports, () => []);
    this.#current = Array.from(ports, () => undefined);
    this.#lastData = Array.from(ports, () => performance.now());
    ports.forEach((port, peer) => {
      if (port) port.onmessage = (e: MessageEvent<Segment>) => this.#onSegment(peer, e.data);
    });
    this.#watchdog = setInterval(
      () => this.#checkTimeouts(),
      Math.min(1000, this.#timeoutMs / 4),
    ) as unknown as number;
    Deno.unrefTimer(this.#watchdog);
  }

  send(peer: number, data: Uint8Array, tag: number): Promise<void> {
    if (this.#aborted) return Promise.reject(this.#aborted);
    const port = this.#ports[peer]!;
    let offset = 0;
    do {
      const len = Math.min(SEGMENT_BYTES, data.byteLength - offset);
      const piece = data.slice(offset, offset + len); // a copy the sender may reuse at once
      const segment: Segment = { tag, total: data.byteLength, offset, data: piece };
      if (len >= TRANSFER_MIN_BYTES) port.postMessage(segment, [piece.buffer]);
      else port.postMessage(segment);
      offset += len;
    } while (offset < data.byteLength);
    return Promise.resolve();
  }

  recv(peer: number, into: Uint8Array, tag: number): Promise<void> {
    if (this.#aborted) return Promise.reject(this.#aborted);
    return new Promise((resolve, reject) => {
      const pending: PendingRecv = { tag, into, received: 0, resolve, reject };
      const arrivals = this.#arrivals[peer];
      const early = arrivals.find((a) => a.tag === tag && !a.waiter);
      if (!early) {
        this.#posted[peer].push(pending);
        this.#lastData[peer] = Math.max(this.#lastData[peer], performance.now());
        return;
      }
      early.waiter = pending;
      this.#settleArrival(peer, early);
    });
  }

  abort(failedRank: number, reason: string): void {
    if (this.#aborted) return;
    this.#aborted = new PeerFailedError(failedRank, reason);
    for (const list of this.#posted) for (const p of list.splice(0)) p.reject(this.#aborted);
    for (const list of this.#arrivals) for (const a of list) a.waiter?.reject(this.#aborted);
  }

  close(): void {
    clearInterval(this.#watchdog);
    for (const port of this.#ports) port?.close();
  }

  #onSegment(peer: number, seg: Segment): void {
    this.#lastData[peer] = performance.now();
    let cur = this.#current[peer];
    if (seg.offset === 0) {
      const posted = this.#posted[peer];
      const i = posted.findIndex((p) => p.tag === seg.tag);
      if (i >= 0) {
        cur = posted.splice(i, 1)[0];
        if (cur.into.byteLength !== seg.total) {
          cur.reject(this.#mismatch(peer, seg.tag, cur.into.byteLength, seg.total));
          cur = { tag: seg.tag, data: new Uint8Array(seg.total), received: 0 }; // drained, dropped
        }
      } else {
        cur = { tag: seg.tag, data: new Uint8Array(seg.total), received: 0 };
        this.#arrivals[peer].push(cur);
      }
      this.#current[peer] = cur;
    }
    if (!cur) return;
    if ("into" in cur) {
      cur.into.set(seg.data, seg.offset);
      cur.received += seg.data.byteLength;
      if (cur.received >= seg.total) {
        this.#current[peer] = undefined;
        cur.resolve();
      }
    } else {
      cur.data.set(seg.data, seg.offset);
      cur.received += seg.data.byteLength;
      if (cur.received >= seg.total) {
        this.#current[peer] = undefined;
        this.#settleArrival(peer, cur);
      }
    }
  }

  #settleArrival(peer: number, a: Arrival): void {
    const waiter = a.waiter;
    if (!waiter || a.received < a.data.byteLength) return;
    const list = this.#arrivals[peer];
    list.splice(list.indexOf(a), 1);
    if (a.data.byteLength !== waiter.into.byteLength) {
      waiter.reject(this.#mismatch(peer, a.tag, waiter.into.byteLength, a.data.byteLength));
    } else {
      waiter.into.set(a.data);
      waiter.resolve();
    }
  }

  #mismatch(peer: number, tag: number, expected: number, got: number): MismatchError {
    return new MismatchError(
      `Rank ${this.rank} expected ${expected} bytes from rank ${peer} (tag ${tag}) but rank ` +
        `${peer} sent ${got}: counts or dtypes differ between ranks`,
      { failedRank: peer },
    );
  }

  #checkTimeouts(): void {
    const now = performance.now();
    for (let peer = 0; peer < this.size; peer++) {
      const waiting = this.#posted[peer].length > 0 ||
        this.#arrivals[peer].some((a) => a.waiter) || this.#current[peer] !== undefined;
      if (!waiting || now - this.#lastData[peer] <= this.#timeoutMs) continue;
      const error = new CommTimeoutError(
        `Rank ${this.rank} timed out after ${this.#timeoutMs} ms waiting for rank ${peer}`,
        { failedRank: peer },
      );
      for (const p of this.#posted[peer].splice(0)) p.reject(error);
      for (const a of this.#arrivals[peer]) a.waiter?.reject(error);
      const cur = this.#current[peer];
      if (cur && "into" in cur) cur.reject(error);
    }
  }
}
