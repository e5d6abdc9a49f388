/**
 * The `tcp` transport: ranks in separate processes (or hosts) linked by Deno's native TCP, one
 * full-duplex connection per pair (no-delay), with its own length-prefixed framing. A send writes
 * a {@linkcode TCP_HEADER_BYTES}-byte header and then the caller's bytes as they are (a small
 * message goes out with its header in one write); a receive reads the payload straight into the
 * posted receive's buffer (into a buffer of its own when none is posted yet, like an unexpected
 * MPI message). Control frames carry stall probes, a failure notice naming the failed rank, and
 * the goodbye of a rank that finished.
 * @module
 */

import { CommError, failureNotice, noticeError, PeerFailedError } from "../errors.ts";
import { DEFAULT_TIMEOUT_MS, MAX_BYTES } from "../types.ts";
import { Inbox } from "./inbox.ts";
import type { CallCheck, Transport } from "./transport.ts";

/** Frame header: kind, tag, payload length, the sender's call stamp, a rank (u32, u32, f64 ×3). */
export const TCP_HEADER_BYTES = 32;
/** Frame kinds. */
export const FRAME = {
  /** A message: `length` payload bytes follow. */
  data: 0xdcc1,
  /** A stalled receive's call stamp (see `CallCheck.stampOf`); no payload. */
  probe: 0xdcc2,
  /** "The group failed because rank `rank` did": the reason follows as UTF-8 text. */
  abort: 0xdcc3,
  /** "This rank finished and sends nothing more"; no payload. */
  bye: 0xdcc4,
} as const;
const FRAME_KINDS: ReadonlySet<number> = new Set(Object.values(FRAME));
/** Longest failure reason a notice carries. */
export const MAX_REASON_BYTES = 1024;
/** Messages up to this size are copied behind their header and written in one call. */
const COALESCE_BYTES = 16 * 1024;
/** Bytes read from a connection at a time while no payload is being read straight into place. */
const READ_BUFFER_BYTES = 256 * 1024;
/** Milliseconds a finishing or failing rank waits for its last frames to leave. */
const FLUSH_MS = 2000;

/** How a connection that ends without a goodbye (end of stream or reset) is described. */
const GONE = "closed (its process exited or was killed)";

/** Options of {@linkcode TcpTransport}. */
export interface TcpTransportOptions {
  /** Milliseconds a receive may go without data before it rejects. @default {30000} */
  timeoutMs?: number;
}

/** A frame header, as read. */
export interface FrameHeader {
  kind: number;
  tag: number;
  length: number;
  stamp: number;
  rank: number;
}

/** Writes `header` into the first {@linkcode TCP_HEADER_BYTES} of `into`. */
export function writeHeader(into: Uint8Array, h: FrameHeader): void {
  const v = new DataView(into.buffer, into.byteOffset, TCP_HEADER_BYTES);
  v.setUint32(0, h.kind, true);
  v.setUint32(4, h.tag, true);
  v.setFloat64(8, h.length, true);
  v.setFloat64(16, h.stamp, true);
  v.setFloat64(24, h.rank, true);
}

/** The header at the start of `bytes`, or why it cannot be a dccl frame from a `size`-rank group. */
export function readHeader(bytes: Uint8Array, size: number): FrameHeader | string {
  const v = new DataView(bytes.buffer, bytes.byteOffset, TCP_HEADER_BYTES);
  const h = {
    kind: v.getUint32(0, true),
    tag: v.getUint32(4, true),
    length: v.getFloat64(8, true),
    stamp: v.getFloat64(16, true),
    rank: v.getFloat64(24, true),
  };
  if (!FRAME_KINDS.has(h.kind)) return "bad magic";
  const limit = h.kind === FRAME.data ? MAX_BYTES : h.kind === FRAME.abort ? MAX_REASON_BYTES : 0;
  if (!Number.isSafeInteger(h.length) || h.length < 0 || h.length > limit) {
    return `${h.length}-byte payload (at most ${limit} accepted)`;
  }
  if (!Number.isSafeInteger(h.stamp) || h.stamp < 0) return `call stamp ${h.stamp}`;
  if (h.kind === FRAME.abort && !(Number.isInteger(h.rank) && h.rank >= 0 && h.rank < size)) {
    return `failure notice naming rank ${h.rank}`;
  }
  return h;
}

/** Writes all of `bytes`, however many calls it takes. */
export async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let off = 0; off < bytes.byteLength;) off += await conn.write(bytes.subarray(off));
}

/** Closes `conn`, if it is still open. */
export function closeQuietly(conn: Deno.Conn | undefined): void {
  try {
    conn?.close();
  } catch { /* already closed */ }
}

/** A value after `ms` milliseconds, unless `p` settles first. */
function within<T>(p: Promise<T>, ms: number): Promise<T | void> {
  let timer: ReturnType<typeof setTimeout>;
  return Promise.race([p, new Promise<void>((r) => timer = setTimeout(r, ms))])
    .finally(() => clearTimeout(timer));
}

/** One peer's connection: an ordered write queue, and what each side has said. */
class Link {
  readonly conn: Deno.TcpConn;
  /** The end of the write queue. */
  tail: Promise<void> = Promise.resolve();
  /** Header and small payload, reused (writes are queued, so one at a time). */
  readonly scratch = new Uint8Array(TCP_HEADER_BYTES + COALESCE_BYTES);
  /** This side sent its goodbye (or a failure notice) and writes nothing more. */
  writeClosed = false;
  /** The peer said goodbye. */
  peerDone = false;
  /** Resolves when the peer's side has ended (end of stream or error). */
  readonly ended: Promise<void>;
  end!: () => void;

  constructor(conn: Deno.TcpConn) {
    this.conn = conn;
    this.ended = new Promise((resolve) => this.end = resolve);
  }

  /** Queues `write` after every earlier write of this link. */
  queue(write: () => Promise<void>): Promise<void> {
    const run = this.tail.then(write);
    this.tail = run.catch(() => {});
    return run;
  }

  /** Queues one frame: its header and payload (coalesced when small). */
  frame(h: FrameHeader, payload?: Uint8Array): Promise<void> {
    return this.queue(async () => {
      const size = payload?.byteLength ?? 0;
      writeHeader(this.scratch, h);
      if (size <= COALESCE_BYTES) {
        if (payload) this.scratch.set(payload, TCP_HEADER_BYTES);
        await writeAll(this.conn, this.scratch.subarray(0, TCP_HEADER_BYTES + size));
      } else {
        await writeAll(this.conn, this.scratch.subarray(0, TCP_HEADER_BYTES));
        await writeAll(this.conn, payload!);
      }
    });
  }

  /** Ends this side's stream after the queued writes; the first call decides the last frame. */
  finish(last: FrameHeader, payload?: Uint8Array): Promise<void> {
    if (this.writeClosed) return this.tail;
    this.writeClosed = true;
    const done = this.frame(last, payload).then(() => this.conn.closeWrite());
    this.tail = done.catch(() => {});
    return this.tail;
  }
}

/** Message transport over a TCP mesh (see the module docs). */
export class TcpTransport implements Transport {
  readonly name = "tcp" as const;
  readonly rank: number;
  readonly size: number;
  calls?: CallCheck;
  #links: (Link | undefined)[];
  #inbox: Inbox;
  #failed?: Error;
  #closing = false;
  /** The failure notices' way out, once aborted. */
  #noticesSent?: Promise<void>;

  /**
   * Runs over `conns[p]`, this rank's connection to rank p (see `connectTcp` for making them),
   * each read no further than its rendezvous.
   */
  constructor(
    rank: number,
    conns: (Deno.TcpConn | undefined)[],
    options: TcpTransportOptions = {},
  ) {
    this.rank = rank;
    this.size = conns.length;
    this.#links = conns.map((c) => c && new Link(c));
    this.#inbox = new Inbox(rank, this.size, options.timeoutMs ?? DEFAULT_TIMEOUT_MS, {
      check: (peer, tag, stamp) => this.calls?.arrived(peer, tag, stamp),
      abort: (error) => this.abort(error),
      stalled: (peer, tag) => this.#probe(peer, tag),
    });
    this.#links.forEach((link, peer) => {
      if (!link) return;
      link.conn.setNoDelay(true);
      this.#read(peer, link)
        .catch((e) =>
          this.#lost(
            peer,
            link,
            e instanceof Deno.errors.ConnectionReset ? GONE : `failed: ${(e as Error).message}`,
          )
        )
        .finally(() => link.end());
    });
  }

  send(peer: number, data: Uint8Array, tag: number, stamp: number): Promise<void> {
    if (this.#failed) return Promise.reject(this.#failed);
    const link = this.#links[peer]!;
    if (link.peerDone || link.writeClosed) {
      return Promise.reject(
        new PeerFailedError(peer, `rank ${peer} has finished and closed its connection`),
      );
    }
    const header = { kind: FRAME.data, tag, length: data.byteLength, stamp, rank: this.rank };
    return link.frame(header, data).catch((e) => {
      throw this.#failed ??
        new PeerFailedError(peer, `sending to rank ${peer} failed: ${e.message}`);
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
    const link = this.#links[peer];
    if (stamp === undefined || !link || link.writeClosed) return;
    link.frame({ kind: FRAME.probe, tag, length: 0, stamp, rank: this.rank }).catch(() => {});
  }

  /** Fails everything here and sends every peer a notice naming the failed rank. */
  abort(error: CommError): void {
    if (this.#failed) return;
    this.#failed = error;
    this.#inbox.fail(error);
    const { failedRank, reason } = failureNotice(error, this.rank);
    const text = new TextEncoder().encode(reason).subarray(0, MAX_REASON_BYTES);
    const notice = {
      kind: FRAME.abort,
      tag: 0,
      length: text.byteLength,
      stamp: 0,
      rank: failedRank,
    };
    this.#noticesSent = Promise.all(
      this.#links.map((link) => link && within(link.finish(notice, text), FLUSH_MS)),
    ).then(() => {});
  }

  /**
   * Says goodbye to every peer once queued frames are out, and closes each connection once the
   * peer's side has ended too (a peer answers a goodbye by ending its side), so nothing either
   * side sent is lost to a reset.
   */
  async close(): Promise<void> {
    this.#closing = true;
    this.#inbox.close();
    await this.#noticesSent;
    const bye = { kind: FRAME.bye, tag: 0, length: 0, stamp: 0, rank: this.rank };
    await Promise.all(this.#links.map(async (link) => {
      if (!link) return;
      await within(link.finish(bye).then(() => link.ended), FLUSH_MS);
      closeQuietly(link.conn);
    }));
  }

  /** Reads `peer`'s frames until its stream ends. */
  async #read(peer: number, link: Link): Promise<void> {
    const buf = new Uint8Array(READ_BUFFER_BYTES);
    let start = 0, end = 0;
    /** Reads until `need` bytes are buffered; false at the end of the stream. */
    const fill = async (need: number): Promise<boolean> => {
      if (start + need > buf.byteLength) {
        buf.copyWithin(0, start, end);
        [start, end] = [0, end - start];
      }
      while (end - start < need) {
        const n = await link.conn.read(buf.subarray(end));
        if (n === null) return false;
        end += n;
      }
      return true;
    };
    while (await fill(TCP_HEADER_BYTES)) {
      const h = readHeader(buf.subarray(start, start + TCP_HEADER_BYTES), this.size);
      if (typeof h === "string") return this.#malformed(peer, h);
      start += TCP_HEADER_BYTES;
      if (h.kind === FRAME.data) {
        // Whatever of the payload is buffered is copied; the rest is read straight into place.
        const into = this.#inbox.begin(peer, h.tag, h.stamp, h.length);
        let got = Math.min(end - start, h.length);
        into.set(buf.subarray(start, start + got));
        start += got;
        this.#inbox.advance(peer, got);
        while (got < h.length) {
          const n = await link.conn.read(into.subarray(got));
          if (n === null) return this.#lost(peer, link, "closed in the middle of a message");
          got += n;
          this.#inbox.advance(peer, n);
        }
      } else if (h.kind === FRAME.probe) {
        const problem = this.calls?.arrived(peer, h.tag, h.stamp);
        if (problem) this.abort(problem);
      } else if (h.kind === FRAME.abort) {
        if (!await fill(h.length)) break;
        const reason = new TextDecoder().decode(buf.subarray(start, start + h.length));
        start += h.length;
        this.abort(noticeError(this.rank, peer, h.rank, reason));
      } else {
        // A goodbye: what it sent is delivered, later receives from it fail, and this side
        // ends too (nothing more is owed to a rank that finished).
        link.peerDone = true;
        const why = new PeerFailedError(peer, `rank ${peer} finished and closed its connection`);
        this.#inbox.closePeer(peer, why);
        link.finish({ kind: FRAME.bye, tag: 0, length: 0, stamp: 0, rank: this.rank })
          .catch(() => {});
      }
    }
    if (!link.peerDone) this.#lost(peer, link, GONE);
  }

  /** `peer`'s connection ended or failed without a goodbye: the group has failed. */
  #lost(peer: number, link: Link, what: string): void {
    if (this.#closing || link.peerDone) return;
    this.abort(new PeerFailedError(peer, `connection to rank ${peer} ${what}`));
  }

  #malformed(peer: number, problem: string): void {
    this.abort(
      new CommError(`malformed frame from rank ${peer}: ${problem}`, { failedRank: peer }),
    );
    closeQuietly(this.#links[peer]!.conn);
  }
}
