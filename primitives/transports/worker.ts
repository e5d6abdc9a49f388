/**
 * The `worker` transport: Web Workers exchanging messages over a MessageChannel mesh with
 * postMessage. Messages are cut into segments so the receiver copies one while the next is in
 * flight. Small segments are structured-cloned; from {@linkcode TRANSFER_MIN_BYTES} on they are
 * copied once into a fresh ArrayBuffer that is transferred (a measured crossover: docs/transports/worker.md).
 * @module
 */

import { type CommError, failureNotice, noticeError } from "../errors.ts";
import { DEFAULT_TIMEOUT_MS } from "../types.ts";
import type { Goodbye } from "./closing_check.ts";
import type { Segment } from "./inbox.ts";
import { InboxTransport } from "./inbox_transport.ts";
import type { TransportFacts, WorkersTransport } from "./transport.ts";

/** Segment size of large messages. */
export const SEGMENT_BYTES = 4 * 1024 * 1024;
/** Segments at least this large are transferred instead of cloned. */
export const TRANSFER_MIN_BYTES = 256 * 1024;

/** Options of {@linkcode WorkerTransport}. */
export interface WorkerTransportOptions {
  /** Milliseconds a receive may go without data before it rejects. @default {30000} */
  timeoutMs?: number;
}

/** A peer telling this rank that `failedRank` failed (and why), so it fails fast too. */
interface AbortNotice {
  abort: { failedRank: number; reason: string };
}

/** A peer waiting on this rank for a call, with its stamp for it (see `CallCheck.stampOf`). */
interface Probe {
  probe: { tag: number; stamp: number };
}

/** A peer closing its part of the group (see closing_check.ts). */
interface GoodbyeMessage {
  bye: Goodbye;
}

/** Message-passing transport between workers. `ports[p]` reaches rank p (undefined for self). */
export class WorkerTransport extends InboxTransport {
  readonly name = "worker" as const;
  readonly facts: TransportFacts = WORKER;
  readonly #ports: (MessagePort | undefined)[];
  #aborted?: Error;

  /** Connects over `ports`. */
  constructor(
    rank: number,
    ports: (MessagePort | undefined)[],
    options: WorkerTransportOptions = {},
  ) {
    super(rank, ports.length, options.timeoutMs ?? DEFAULT_TIMEOUT_MS, {
      stalled: (peer, tag) => {
        const stamp = this.calls?.stampOf(tag);
        if (stamp !== undefined) {
          ports[peer]!.postMessage({ probe: { tag, stamp } } satisfies Probe);
        }
      },
    });
    this.#ports = ports;
    ports.forEach((port, peer) => {
      if (!port) return;
      port.onmessage = (e: MessageEvent<Segment | AbortNotice | Probe | GoodbyeMessage>) => {
        const msg = e.data;
        if ("bye" in msg) this.peerClosed(peer, msg.bye);
        else if ("abort" in msg) {
          this.abort(noticeError(rank, peer, msg.abort.failedRank, msg.abort.reason));
        } else if ("probe" in msg) {
          const problem = this.calls?.arrived(peer, msg.probe.tag, msg.probe.stamp);
          if (problem) this.abort(problem);
        } else this.inbox.deliver(peer, msg);
      };
    });
  }

  send(peer: number, data: Uint8Array, tag: number, stamp: number): Promise<void> {
    if (this.#aborted) return Promise.reject(this.#aborted);
    const port = this.#ports[peer]!;
    const total = data.byteLength;
    this.sent[peer]++;
    let offset = 0;
    do {
      const len = Math.min(SEGMENT_BYTES, data.byteLength - offset);
      if (len >= TRANSFER_MIN_BYTES) {
        const piece = data.slice(offset, offset + len); // a copy the sender may reuse at once
        port.postMessage({ tag, stamp, total, offset, data: piece }, [piece.buffer]);
      } else {
        // Cloning copies the view's whole buffer, or shares a SharedArrayBuffer: clone a private
        // buffer the message covers exactly as it is, and a slice of anything else.
        const piece = coversPrivateBuffer(data, len) ? data : data.slice(offset, offset + len);
        port.postMessage({ tag, stamp, total, offset, data: piece } satisfies Segment);
      }
      offset += len;
    } while (offset < data.byteLength);
    return Promise.resolve();
  }

  abort(error: CommError): void {
    if (this.#aborted) return;
    this.#aborted = error;
    this.inbox.fail(error);
    const notice: AbortNotice = { abort: failureNotice(error, this.rank) };
    for (const port of this.#ports) port?.postMessage(notice);
    this.goodbyes.interrupt();
  }

  /**
   * Says goodbye to every peer and waits for theirs (closing_check.ts); rejects with what that finds,
   * or with the failure that aborted this transport.
   */
  async close(): Promise<void> {
    if (!this.#aborted) {
      const problem = await this.farewell(
        (peer, bye) => this.#ports[peer]!.postMessage({ bye } satisfies GoodbyeMessage),
        () => this.#aborted !== undefined,
      );
      if (problem) this.abort(problem);
    }
    this.inbox.close();
    for (const port of this.#ports) port?.close();
    if (this.#aborted) throw this.#aborted;
  }
}

/** Whether `data` is all of a non-shared ArrayBuffer and goes in one segment of `len` bytes. */
function coversPrivateBuffer(data: Uint8Array, len: number): boolean {
  return len === data.buffer.byteLength && !(data.buffer instanceof SharedArrayBuffer);
}

/** `ports[r][p]`: rank r's end of the channel to rank p (undefined for r = p). */
function meshPorts(size: number): (MessagePort | undefined)[][] {
  const ports = Array.from({ length: size }, () => new Array<MessagePort | undefined>(size));
  for (let a = 0; a < size; a++) {
    for (let b = a + 1; b < size; b++) {
      const channel = new MessageChannel();
      ports[a][b] = channel.port1;
      ports[b][a] = channel.port2;
    }
  }
  return ports;
}

/** The `worker` transport: workers passing messages (see `TransportFacts`). */
export const WORKER: WorkersTransport & { name: "worker" } = {
  name: "worker",
  summary: "workers passing messages: postMessage over a MessageChannel per pair",
  launch: "workers",
  memory: ["host", "shared", "gpu", "managed"],
  bestMemory: "host",
  offers: ["messages", "staging"],
  needsDevice: false,
  blocking: false,
  rankBytes: 16 * 2 ** 20,
  groupBytes: () => 0,
  bounds: { latency: "postMessage", bandwidth: "memory" },
  prepare(size) {
    const ports = meshPorts(size);
    return {
      forRank: (rank) => ({
        handed: ports[rank],
        transfer: ports[rank].filter((p): p is MessagePort => p !== undefined),
      }),
    };
  },
  join(rank, { handed, timeoutMs }) {
    return new WorkerTransport(rank, handed as (MessagePort | undefined)[], { timeoutMs });
  },
};
