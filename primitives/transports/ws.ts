/**
 * The `ws` transport: ranks in separate processes (or hosts) linked by WebSockets (npm `ws`).
 * Each ordered pair has its own connection and data always flows from that connection's server
 * to its client, so no frame is ever masked (client→server masking costs a pass over every byte).
 * Messages go in frames of at most {@linkcode WS_SEGMENT_BYTES} through a few reusable frame
 * buffers per peer, so a 1 GiB message streams through bounded memory.
 * @module
 */

import type { WebSocket } from "ws";
import { CommError, failureNotice, noticeError, PeerFailedError } from "../errors.ts";
import { DEFAULT_TIMEOUT_MS, MAX_BYTES } from "../types.ts";
import { Inbox } from "./inbox.ts";
import type { CallCheck, Transport } from "./transport.ts";

/** Largest payload of one frame. */
export const WS_SEGMENT_BYTES = 1024 * 1024;
/**
 * Frame header: magic, tag, message length, offset, the sender's call stamp (little-endian u32,
 * u32, f64, f64, f64).
 */
export const WS_HEADER_BYTES = 32;
/**
 * Close codes from here on (private use, RFC 6455) say "the group failed because rank
 * `code − ABORT_CLOSE_BASE` did", with the reason as close text.
 */
export const ABORT_CLOSE_BASE = 4000;
const MAGIC = 0xdcc1;
/** Magic of a probe: a header without payload carrying this rank's stamp for a stalled call. */
const PROBE_MAGIC = 0xdcc2;
/** Frame buffers in flight per peer. */
const FRAMES_IN_FLIGHT = 4;
/** How long a send to a closing socket waits for the close event and its reason. */
const CLOSE_WAIT_MS = 1000;

/** Options of {@linkcode WsTransport}. */
export interface WsTransportOptions {
  /** Milliseconds a receive may go without data before it rejects. @default {30000} */
  timeoutMs?: number;
}

/** The sockets of one rank: `sendTo[p]` carries data to p, `recvFrom[p]` brings p's data. */
export interface WsLinks {
  sendTo: (WebSocket | undefined)[];
  recvFrom: (WebSocket | undefined)[];
  /** Frames that arrived from each peer before the transport existed, in order. */
  backlog: ([Uint8Array, boolean][] | undefined)[];
}

/** One peer's outgoing side: its socket, free frame buffers and the queue of pending sends. */
class Outbox {
  #socket: WebSocket;
  #free: Uint8Array[] = [];
  #allocated = 0;
  #waiting: { resolve: (frame: Uint8Array) => void; reject: (e: Error) => void }[] = [];
  #tail: Promise<void> = Promise.resolve();

  constructor(socket: WebSocket) {
    this.#socket = socket;
  }

  /** Queues `data` as one message; resolves when every byte is copied into frames. */
  send(
    data: Uint8Array,
    tag: number,
    stamp: number,
    fail: () => Error | undefined,
  ): Promise<void> {
    const run = this.#tail.then(async () => {
      let offset = 0;
      do {
        const failed = fail();
        if (failed) throw failed;
        const len = Math.min(WS_SEGMENT_BYTES, data.byteLength - offset);
        const frame = await this.#frame();
        const head = new DataView(frame.buffer, frame.byteOffset, WS_HEADER_BYTES);
        head.setUint32(0, MAGIC, true);
        head.setUint32(4, tag, true);
        head.setFloat64(8, data.byteLength, true);
        head.setFloat64(16, offset, true);
        head.setFloat64(24, stamp, true);
        frame.set(data.subarray(offset, offset + len), WS_HEADER_BYTES);
        this.#socket.send(
          frame.subarray(0, WS_HEADER_BYTES + len),
          { binary: true },
          () => this.#release(frame),
        );
        offset += len;
      } while (offset < data.byteLength);
    });
    this.#tail = run.catch(() => {});
    return run;
  }

  #frame(): Promise<Uint8Array> | Uint8Array {
    const free = this.#free.pop();
    if (free) return free;
    if (this.#allocated < FRAMES_IN_FLIGHT) {
      this.#allocated++;
      return new Uint8Array(WS_HEADER_BYTES + WS_SEGMENT_BYTES);
    }
    return new Promise((resolve, reject) => this.#waiting.push({ resolve, reject }));
  }

  #release(frame: Uint8Array): void {
    const next = this.#waiting.shift();
    if (next) next.resolve(frame);
    else this.#free.push(frame);
  }

  /** Fails sends waiting for a frame buffer (their socket will never free one). */
  fail(error: Error): void {
    for (const w of this.#waiting.splice(0)) w.reject(error);
  }
}

/** Message transport over a WebSocket mesh (see the module docs). */
export class WsTransport implements Transport {
  readonly name = "ws" as const;
  readonly rank: number;
  readonly size: number;
  calls?: CallCheck;
  #links: WsLinks;
  #outboxes: (Outbox | undefined)[];
  #inbox: Inbox;
  #failed?: Error;
  #closing = false;

  /** Runs over connected `links` (see {@linkcode connectWs} for making them). */
  constructor(rank: number, links: WsLinks, options: WsTransportOptions = {}) {
    this.rank = rank;
    this.size = links.sendTo.length;
    this.#links = links;
    this.#inbox = new Inbox(rank, this.size, options.timeoutMs ?? DEFAULT_TIMEOUT_MS, {
      check: (peer, tag, stamp) => this.calls?.arrived(peer, tag, stamp),
      abort: (error) => this.abort(error),
      stalled: (peer, tag) => this.#probe(peer, tag),
    });
    this.#outboxes = links.sendTo.map((s) => s && new Outbox(s));
    links.recvFrom.forEach((socket, peer) => {
      if (!socket) return;
      socket.removeAllListeners("message");
      for (const [data, isBinary] of links.backlog[peer] ?? []) this.#onFrame(peer, data, isBinary);
      socket.on(
        "message",
        (data: Uint8Array, isBinary: boolean) => this.#onFrame(peer, data, isBinary),
      );
    });
    for (const [list, carriesData] of [[links.sendTo, false], [links.recvFrom, true]] as const) {
      list.forEach((socket, peer) => {
        socket?.on(
          "close",
          (code: number, reason: Uint8Array) => this.#onClose(peer, carriesData, code, reason),
        );
        socket?.on(
          "error",
          (e: Error) =>
            this.abort(
              new PeerFailedError(peer, `connection to rank ${peer} failed: ${e.message}`),
            ),
        );
      });
    }
  }

  send(peer: number, data: Uint8Array, tag: number, stamp: number): Promise<void> {
    if (this.#failed) return Promise.reject(this.#failed);
    const socket = this.#links.sendTo[peer]!;
    if (socket.readyState !== socket.OPEN) return this.#closedTo(peer, socket);
    return this.#outboxes[peer]!.send(data, tag, stamp, () => this.#failed);
  }

  /**
   * A send to a socket that is not open. A peer that aborted has sent its close frame, and
   * the socket is closing: its close event (soon, bounded here) carries the peer's reason, so
   * the rejection waits for it instead of racing it with a reason-less "closed".
   */
  #closedTo(peer: number, socket: WebSocket): Promise<never> {
    const closed = () =>
      this.#failed ?? new PeerFailedError(peer, `connection to rank ${peer} is closed`);
    if (socket.readyState === socket.CLOSED) return Promise.reject(closed());
    return new Promise((_, reject) => {
      const done = () => {
        clearTimeout(timer);
        reject(closed());
      };
      const timer = setTimeout(done, CLOSE_WAIT_MS);
      socket.once("close", done);
    });
  }

  recv(peer: number, into: Uint8Array, tag: number): Promise<number> {
    return this.#inbox.post(peer, into, tag);
  }

  probe(peers: readonly number[], tag: number): Promise<number> {
    return this.#inbox.probe(peers, tag);
  }

  /** Sends `peer` this rank's stamp for its call with `tag` (see `CallCheck.stampOf`). */
  #probe(peer: number, tag: number): void {
    const stamp = this.calls?.stampOf(tag);
    const socket = this.#links.sendTo[peer];
    if (stamp === undefined || !socket || socket.readyState !== socket.OPEN) return;
    const frame = new Uint8Array(WS_HEADER_BYTES);
    const head = new DataView(frame.buffer);
    head.setUint32(0, PROBE_MAGIC, true);
    head.setUint32(4, tag, true);
    head.setFloat64(24, stamp, true);
    socket.send(frame, { binary: true });
  }

  /** Fails everything here and closes every connection with a code naming the failed rank. */
  abort(error: CommError): void {
    if (this.#failed) return;
    this.#failed = error;
    this.#inbox.fail(error);
    for (const outbox of this.#outboxes) outbox?.fail(error);
    const { failedRank, reason } = failureNotice(error, this.rank);
    for (const s of [...this.#links.sendTo, ...this.#links.recvFrom]) {
      if (s && s.readyState === s.OPEN) s.close(ABORT_CLOSE_BASE + failedRank, closeText(reason));
    }
  }

  /** Closes every connection with 1000 ("this rank finished") once queued frames are out. */
  async close(): Promise<void> {
    this.#closing = true;
    this.#inbox.close();
    const sockets = [...this.#links.sendTo, ...this.#links.recvFrom].filter((s) => s !== undefined);
    await Promise.all(sockets.map((s) =>
      new Promise<void>((resolve) => {
        if (s.readyState === s.CLOSED) return resolve();
        s.once("close", () => resolve());
        s.close(1000, "done");
        // A peer that never answers the close handshake must not hold this rank up.
        const timer = setTimeout(() => {
          s.terminate();
          resolve();
        }, 2000);
        s.once("close", () => clearTimeout(timer));
      })
    ));
  }

  /**
   * A peer that finished closes with 1000: what it sent is still delivered, and once the
   * connection carrying its data closes, later receives from it fail (its other connection may
   * close first: the two are separate TCP streams). Any other close (a killed process shows as
   * 1006) fails every operation at once.
   */
  #onClose(peer: number, carriesData: boolean, code: number, reason: Uint8Array): void {
    if (this.#closing) return;
    const why = new TextDecoder().decode(reason);
    if (code >= ABORT_CLOSE_BASE && code < ABORT_CLOSE_BASE + 1000) {
      return this.abort(noticeError(this.rank, peer, code - ABORT_CLOSE_BASE, why));
    }
    const message = `connection to rank ${peer} closed (code ${code}${why ? `: ${why}` : ""})`;
    if (code !== 1000) this.abort(new PeerFailedError(peer, message));
    else if (carriesData) this.#inbox.closePeer(peer, new PeerFailedError(peer, message));
  }

  /** Validates a frame from `peer`; anything malformed closes that connection and fails the rank. */
  #onFrame(peer: number, data: Uint8Array, isBinary: boolean): void {
    const problem = frameProblem(data, isBinary);
    if (problem) {
      const reason = `malformed frame from rank ${peer}: ${problem}`;
      this.#links.recvFrom[peer]?.close(1002, closeText(reason));
      this.abort(new CommError(reason, { failedRank: peer }));
      return;
    }
    const head = new DataView(data.buffer, data.byteOffset, WS_HEADER_BYTES);
    if (head.getUint32(0, true) === PROBE_MAGIC) {
      const problem = this.calls?.arrived(peer, head.getUint32(4, true), head.getFloat64(24, true));
      if (problem) this.abort(problem);
      return;
    }
    this.#inbox.deliver(peer, {
      tag: head.getUint32(4, true),
      total: head.getFloat64(8, true),
      offset: head.getFloat64(16, true),
      stamp: head.getFloat64(24, true),
      data: data.subarray(WS_HEADER_BYTES),
    });
  }
}

/** `text` cut to the 123 bytes of UTF-8 a WebSocket close frame carries. */
export function closeText(text: string): string {
  const bytes = new TextEncoder().encode(text);
  if (bytes.byteLength <= 123) return text;
  return new TextDecoder().decode(bytes.subarray(0, 120)).replace(/\uFFFD*$/, "") + "…";
}

/** Why a frame cannot be a dccl data frame, or undefined when it can. */
export function frameProblem(data: Uint8Array, isBinary: boolean): string | undefined {
  if (!isBinary) return "text frame";
  if (data.byteLength < WS_HEADER_BYTES) {
    return `${data.byteLength}-byte frame is shorter than its header`;
  }
  const head = new DataView(data.buffer, data.byteOffset, WS_HEADER_BYTES);
  const magic = head.getUint32(0, true);
  if (magic !== MAGIC && magic !== PROBE_MAGIC) return "bad magic";
  const total = head.getFloat64(8, true), offset = head.getFloat64(16, true);
  const payload = data.byteLength - WS_HEADER_BYTES;
  if (!Number.isSafeInteger(total) || total < 0 || total > MAX_BYTES) {
    return `message length ${total}`;
  }
  if (!Number.isSafeInteger(offset) || offset < 0 || offset + payload > total) {
    return `segment ${offset}+${payload} outside a ${total}-byte message`;
  }
  const stamp = head.getFloat64(24, true);
  if (!Number.isSafeInteger(stamp) || stamp < 0) return `call stamp ${stamp}`;
  return undefined;
}
