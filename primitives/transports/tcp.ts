/**
 * The `tcp` transport: ranks in separate processes (or hosts) linked by Deno's native TCP, one
 * full-duplex connection per pair (no-delay), with its own length-prefixed framing. A send writes
 * a {@linkcode TCP_HEADER_BYTES}-byte header and then the caller's bytes as they are (a small
 * message goes out with its header in one write); a receive reads the payload straight into the
 * posted receive's buffer (into a buffer of its own when none is posted yet, like an unexpected
 * MPI message). Control frames carry stall probes, a failure notice naming the failed rank, and
 * the goodbye of a rank that finished.
 *
 * Bytes move one of two ways, the same frames either way: through Deno's async reads and writes,
 * or, where the C library's socket calls are available (socket_calls.ts), through nonblocking
 * `send`/`recv` made synchronously: a send reaches the kernel within the call, and a call that
 * waits polls every socket (its own data and everything else that arrives) until it is done,
 * sleeping in `poll` once nothing has moved for {@linkcode SPIN_MS}.
 * @module
 */

import { CommError, failureNotice, noticeError, PeerFailedError } from "../errors.ts";
import { DEFAULT_TIMEOUT_MS, MAX_BYTES } from "../types.ts";
import { Inbox } from "./inbox.ts";
import {
  POLLIN,
  POLLOUT,
  type SocketCalls,
  socketCalls,
  SocketError,
  socketFd,
  WOULD_BLOCK,
} from "./socket_calls.ts";
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
/**
 * Socket calls: how long a wait keeps polling its sockets after the last byte moved before it
 * sleeps in `poll`, polls between two clock readings, and reads of one socket per pass.
 */
const SPIN_MS = 1, POLLS_PER_CLOCK = 16, READS_PER_PUMP = 8;
/** Longest sleep in `poll`, so a wait notices a settled call or a closed transport. */
const POLL_SLICE_MS = 50;
const ECONNRESET = 104;

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

/** Bytes queued for the kernel (socket calls only); a frame's last piece settles its promise. */
interface Outgoing {
  bytes: Uint8Array;
  off: number;
  settle?: { resolve: () => void; reject: (e: Error) => void };
}

/**
 * One peer's connection: the frame reader's buffer, the write queue, and what each side has said.
 * With socket calls (`fd` known), frames go to the kernel at once from the caller's buffer and
 * what does not fit waits in `outgoing` for the transport's pump; otherwise through Deno's async
 * writes, one after another.
 */
class Link {
  readonly conn: Deno.TcpConn;
  /** The socket's descriptor, when socket calls drive this link. */
  readonly fd: number | undefined;
  // Reading: frames are parsed out of `buf[start, end)`, except that a payload whose rest has not
  // arrived yet is read straight into place (`into[got, got + due)`).
  readonly buf = new Uint8Array(READ_BUFFER_BYTES);
  start = 0;
  end = 0;
  into: Uint8Array = new Uint8Array(0);
  got = 0;
  due = 0;
  /** The last `target()` was the payload itself, not `buf`. */
  direct = false;
  /** Nothing more will be read (the stream ended, failed, or was refused). */
  readDone = false;
  // Writing.
  /** The end of Deno's write queue. */
  tail: Promise<void> = Promise.resolve();
  readonly outgoing: Outgoing[] = [];
  /** Header and small payload, reused (a frame's bytes are copied out if they must wait). */
  readonly scratch = new Uint8Array(TCP_HEADER_BYTES + COALESCE_BYTES);
  /** This side sent its goodbye (or a failure notice) and writes nothing more. */
  writeClosed = false;
  /** The peer said goodbye. */
  peerDone = false;
  /** The descriptor was closed: no socket call may use it again (the number can be reused). */
  closed = false;
  /** Resolves when the peer's side has ended (end of stream or error). */
  readonly ended: Promise<void>;
  #end!: () => void;

  constructor(conn: Deno.TcpConn, fd: number | undefined) {
    this.conn = conn;
    this.fd = fd;
    this.ended = new Promise((resolve) => this.#end = resolve);
  }

  /** Where the next bytes read go: straight into the payload once the buffer holds none of it. */
  target(): Uint8Array {
    this.direct = this.due > 0 && this.start === this.end;
    if (this.direct) return this.#rest(this.into, this.got);
    if (this.start === this.end) this.start = this.end = 0;
    else if (this.end === this.buf.byteLength) {
      this.buf.copyWithin(0, this.start, this.end);
      [this.start, this.end] = [0, this.end - this.start];
    }
    return this.#rest(this.buf, this.end);
  }

  /** `of` from `at` on; the view is kept while it stays the same (polls ask again and again). */
  #rest(of: Uint8Array, at: number): Uint8Array {
    if (of !== this.#restOf || at !== this.#restAt) {
      [this.#restOf, this.#restAt, this.#restView] = [of, at, of.subarray(at)];
    }
    return this.#restView;
  }
  #restOf?: Uint8Array;
  #restAt = -1;
  #restView: Uint8Array = new Uint8Array(0);

  /** Stops reading; the peer's side counts as ended. */
  stopReading(): void {
    this.readDone = true;
    this.#end();
  }

  /** Closes the connection; socket calls leave its descriptor alone from now on. */
  close(): void {
    this.closed = true;
    this.stopReading();
    closeQuietly(this.conn);
    const closed = new Error("connection closed");
    for (const w of this.outgoing.splice(0)) w.settle?.reject(closed);
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
  /** Socket calls, when this transport drives its sockets itself. */
  #sockets: SocketCalls | undefined;
  #failed?: Error;
  #closing = false;
  /** Sleeps in `poll` in flight (socket calls). */
  #sleeps = new Set<Promise<void>>();
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
    for (const c of conns) c?.setNoDelay(true);
    // Socket calls drive every link or none.
    let sockets = socketCalls(this.size);
    const fds = conns.map((c) => c && sockets && socketFd(c));
    if (conns.some((c, p) => c && fds[p] === undefined)) sockets = undefined;
    this.#sockets = sockets;
    this.#links = conns.map((c, p) => c && new Link(c, sockets && fds[p]));
    this.#inbox = new Inbox(rank, this.size, options.timeoutMs ?? DEFAULT_TIMEOUT_MS, {
      check: (peer, tag, stamp) => this.calls?.arrived(peer, tag, stamp),
      abort: (error) => this.abort(error),
      stalled: (peer, tag) => this.#probe(peer, tag),
    });
    if (sockets) {
      this.#watch();
      return;
    }
    this.#links.forEach((link, peer) => {
      if (!link) return;
      this.#read(peer, link)
        .catch((e) => this.#lost(peer, link, e instanceof Deno.errors.ConnectionReset ? GONE : e))
        .finally(() => link.stopReading());
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
    return this.#frame(link, header, data).catch((e) => {
      throw this.#failed ??
        new PeerFailedError(peer, `sending to rank ${peer} failed: ${e.message}`);
    });
  }

  recv(peer: number, into: Uint8Array, tag: number): Promise<number> {
    return this.#inboxWait((settled) => this.#inbox.post(peer, into, tag, settled));
  }

  probe(peers: readonly number[], tag: number): Promise<number> {
    return this.#inboxWait((settled) => this.#inbox.probe(peers, tag, settled));
  }

  /** Starts a wait of the inbox; with socket calls, also polls the sockets until it settles. */
  #inboxWait<T>(start: (onSettled?: () => void) => Promise<T>): Promise<T> {
    if (!this.#sockets) return start();
    let settled = false;
    const waiting = start(() => settled = true);
    this.#drive(() => settled);
    return waiting;
  }

  /** Sends `peer` this rank's stamp for its call with `tag` (see `CallCheck.stampOf`). */
  #probe(peer: number, tag: number): void {
    const stamp = this.calls?.stampOf(tag);
    const link = this.#links[peer];
    if (stamp === undefined || !link || link.writeClosed) return;
    this.#frame(link, { kind: FRAME.probe, tag, length: 0, stamp, rank: this.rank })
      .catch(() => {});
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
      this.#links.map((link) => link && within(this.#finish(link, notice, text), FLUSH_MS)),
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
    const links = this.#links.filter((l) => l !== undefined);
    if (this.#sockets) {
      this.#drive(() => links.every((l) => l.readDone), performance.now() + FLUSH_MS);
    }
    await Promise.all(links.map(async (link) => {
      await within(this.#finish(link, bye).then(() => link.ended), FLUSH_MS);
      link.close();
    }));
    // Sleeps in `poll` end within a slice: none outlives the transport.
    await Promise.all(this.#sleeps);
  }

  /** Queues one frame on `link`: its header and payload (coalesced when small). */
  #frame(link: Link, h: FrameHeader, payload?: Uint8Array): Promise<void> {
    const size = payload?.byteLength ?? 0;
    if (this.#sockets) {
      writeHeader(link.scratch, h);
      const coalesce = size <= COALESCE_BYTES;
      if (coalesce && payload) link.scratch.set(payload, TCP_HEADER_BYTES);
      const head = link.scratch.subarray(0, TCP_HEADER_BYTES + (coalesce ? size : 0));
      return this.#write(link, head, coalesce ? undefined : payload);
    }
    const run = link.tail.then(async () => {
      writeHeader(link.scratch, h);
      if (size <= COALESCE_BYTES) {
        if (payload) link.scratch.set(payload, TCP_HEADER_BYTES);
        await writeAll(link.conn, link.scratch.subarray(0, TCP_HEADER_BYTES + size));
      } else {
        await writeAll(link.conn, link.scratch.subarray(0, TCP_HEADER_BYTES));
        await writeAll(link.conn, payload!);
      }
    });
    link.tail = run.catch(() => {});
    return run;
  }

  /**
   * Socket calls: queues a frame (`head` from the link's scratch, then `payload` if it was not
   * coalesced) and writes the queue as far as the kernel takes it now; resolves once the frame is
   * written. What is left of `head` is copied, since the next frame reuses the scratch.
   */
  #write(link: Link, head: Uint8Array, payload?: Uint8Array): Promise<void> {
    if (link.closed) return Promise.reject(new Error("connection closed"));
    const first: Outgoing = { bytes: head, off: 0 };
    const written = new Promise<void>((resolve, reject) => {
      link.outgoing.push(first);
      const last = payload ? { bytes: payload, off: 0 } : first;
      if (payload) link.outgoing.push(last);
      last.settle = { resolve, reject };
    });
    this.#flush(link);
    if (first.off < head.byteLength && link.outgoing.includes(first)) {
      first.bytes = head.slice(first.off);
      first.off = 0;
    }
    if (link.outgoing.length > 0) this.#drive(() => link.outgoing.length === 0);
    return written;
  }

  /** Ends this side's stream after the queued frames; the first call decides the last frame. */
  #finish(link: Link, last: FrameHeader, payload?: Uint8Array): Promise<void> {
    if (link.writeClosed) return link.tail;
    link.writeClosed = true;
    const done = this.#frame(link, last, payload).then(() => link.conn.closeWrite());
    link.tail = done.catch(() => {});
    return link.tail;
  }

  /**
   * Socket calls: pumps every socket until `done()` (or `deadline`, a `performance.now()` time).
   * It polls while data moves and for {@linkcode SPIN_MS} after (a peer that answers within that
   * is heard at once), then waits in `poll` off the JS thread. Never rejects.
   */
  async #drive(done: () => boolean, deadline = Infinity): Promise<void> {
    await null; // let sibling calls post (and write) before this one spins
    let idleSince = performance.now();
    let idle = 0;
    while (!done() && !this.#closedAll()) {
      if (this.#pump()) {
        idle = 0;
        idleSince = -1;
        continue;
      }
      if (++idle % POLLS_PER_CLOCK !== 0) continue;
      const now = performance.now();
      if (now > deadline) return;
      if (idleSince < 0) idleSince = now;
      if (now - idleSince < SPIN_MS) continue;
      await this.#sleep();
      idle = 0;
    }
  }

  /**
   * Socket calls: reads whatever arrives while no call waits, as Deno's reads would (a goodbye is
   * answered, a failure notice heard, even while this rank computes).
   */
  async #watch(): Promise<void> {
    while (!this.#closedAll()) {
      await this.#sleep();
      this.#pump();
    }
  }

  /** Sleeps in `poll` off the JS thread until a socket is ready or a slice has passed. */
  #sleep(): Promise<void> {
    const sleep = this.#sockets!.poll(this.#pollSet(), POLL_SLICE_MS);
    this.#sleeps.add(sleep);
    return sleep.finally(() => this.#sleeps.delete(sleep));
  }

  #closedAll(): boolean {
    return this.#links.every((l) => !l || l.closed);
  }

  /** `struct pollfd`s of every open link: readable while it reads, writable while it queues. */
  #pollSet(): Int32Array {
    const set: number[] = [];
    for (const link of this.#links) {
      if (!link || link.closed) continue;
      const events = (link.readDone ? 0 : POLLIN) | (link.outgoing.length > 0 ? POLLOUT : 0);
      if (events) set.push(link.fd!, events);
    }
    return Int32Array.from(set);
  }

  /** One pass over every socket: queued writes out, arrived bytes in. Whether anything moved. */
  #pump(): boolean {
    let moved = false;
    for (let peer = 0; peer < this.size; peer++) {
      const link = this.#links[peer];
      if (!link || link.closed) continue;
      if (link.outgoing.length > 0 && this.#flush(link)) moved = true;
      if (!link.readDone && this.#drain(peer, link)) moved = true;
    }
    return moved;
  }

  #flush(link: Link): boolean {
    let moved = false;
    try {
      while (link.outgoing.length > 0) {
        const w = link.outgoing[0];
        const n = this.#sockets!.send(link.fd!, w.bytes.subarray(w.off));
        if (n === WOULD_BLOCK) return moved;
        moved = true;
        w.off += n;
        if (w.off < w.bytes.byteLength) continue;
        link.outgoing.shift();
        w.settle?.resolve();
      }
    } catch (e) {
      for (const w of link.outgoing.splice(0)) w.settle?.reject(e as Error); // send() names the peer
      return true;
    }
    return moved;
  }

  /** Reads what `peer` sent, a few reads at most (so writes interleave with a long stream). */
  #drain(peer: number, link: Link): boolean {
    try {
      for (let reads = 0; reads < READS_PER_PUMP; reads++) {
        const n = this.#sockets!.recv(link.fd!, link.target());
        if (n === WOULD_BLOCK) return reads > 0;
        if (n === 0) {
          this.#ended(peer, link);
          return true;
        }
        if (!this.#consume(peer, link, n)) return true;
      }
    } catch (e) {
      this.#lost(peer, link, e instanceof SocketError && e.errno === ECONNRESET ? GONE : e);
      link.stopReading();
    }
    return true;
  }

  /** Deno's reads: `peer`'s frames until its stream ends. */
  async #read(peer: number, link: Link): Promise<void> {
    for (;;) {
      const n = await link.conn.read(link.target());
      if (n === null) return this.#ended(peer, link);
      if (!this.#consume(peer, link, n)) return;
    }
  }

  /**
   * Takes `n` bytes just read into `link.target()`: hands payload bytes to the inbox and acts on
   * every complete frame. False once reading must stop (a malformed frame).
   */
  #consume(peer: number, link: Link, n: number): boolean {
    if (link.direct) {
      link.got += n;
      link.due -= n;
      this.#inbox.advance(peer, n);
    } else link.end += n;
    for (;;) {
      if (link.due > 0) {
        const take = Math.min(link.end - link.start, link.due);
        if (take === 0) return true;
        link.into.set(link.buf.subarray(link.start, link.start + take), link.got);
        link.start += take;
        link.got += take;
        link.due -= take;
        this.#inbox.advance(peer, take);
        continue;
      }
      if (link.end - link.start < TCP_HEADER_BYTES) return true;
      const h = readHeader(link.buf.subarray(link.start, link.start + TCP_HEADER_BYTES), this.size);
      if (typeof h === "string") {
        this.#malformed(peer, h);
        return false;
      }
      const bytes = TCP_HEADER_BYTES + (h.kind === FRAME.abort ? h.length : 0);
      if (link.end - link.start < bytes) return true; // a failure notice's reason is still coming
      link.start += bytes;
      if (h.kind === FRAME.data) {
        // Whatever of the payload is buffered is copied (the loop's first branch); the rest is
        // read straight into place.
        link.into = this.#inbox.begin(peer, h.tag, h.stamp, h.length);
        link.got = 0;
        link.due = h.length;
        this.#inbox.advance(peer, 0); // marks the peer active (and settles an empty message)
      } else if (h.kind === FRAME.probe) {
        const problem = this.calls?.arrived(peer, h.tag, h.stamp);
        if (problem) this.abort(problem);
      } else if (h.kind === FRAME.abort) {
        const text = link.buf.subarray(link.start - h.length, link.start);
        this.abort(noticeError(this.rank, peer, h.rank, new TextDecoder().decode(text)));
      } else {
        // A goodbye: what it sent is delivered, later receives from it fail, and this side
        // ends too (nothing more is owed to a rank that finished).
        link.peerDone = true;
        const why = new PeerFailedError(peer, `rank ${peer} finished and closed its connection`);
        this.#inbox.closePeer(peer, why);
        this.#finish(link, { kind: FRAME.bye, tag: 0, length: 0, stamp: 0, rank: this.rank })
          .catch(() => {});
      }
    }
  }

  /** `peer`'s stream ended: mid-message, or without a goodbye, the group has failed. */
  #ended(peer: number, link: Link): void {
    if (link.due > 0) this.#lost(peer, link, "closed in the middle of a message");
    else if (!link.peerDone) this.#lost(peer, link, GONE);
    link.stopReading();
  }

  /** `peer`'s connection ended or failed without a goodbye: the group has failed. */
  #lost(peer: number, link: Link, what: string | unknown): void {
    if (this.#closing || link.peerDone) return;
    const how = typeof what === "string" ? what : `failed: ${(what as Error).message}`;
    this.abort(new PeerFailedError(peer, `connection to rank ${peer} ${how}`));
  }

  #malformed(peer: number, problem: string): void {
    this.abort(
      new CommError(`malformed frame from rank ${peer}: ${problem}`, { failedRank: peer }),
    );
    this.#links[peer]!.close();
  }
}
