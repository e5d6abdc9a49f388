/**
 * The engine of the byte-stream transports (`tcp`, `ws`): ranks in separate processes (or hosts)
 * linked by TCP connections (no-delay) that carry frames of a {@linkcode Wire} format. A send
 * writes a frame's head and then the caller's bytes as they are (a small message goes out with its
 * head in one write); a receive reads the payload straight into the posted receive's buffer (into
 * a buffer of its own when none is posted yet, like an unexpected MPI message). A message larger
 * than {@linkcode FRAGMENT_BYTES} goes as consecutive data frames of at most that much. Control
 * frames carry stall probes, a failure notice naming the failed rank, and the goodbye of a rank
 * that finished.
 *
 * Bytes move one of two ways, the same frames either way: through Deno's async reads and writes,
 * or, where the C library's socket calls are available (socket_calls.ts), through nonblocking
 * `send`/`recv` made synchronously: a send reaches the kernel within the call (a large one its
 * first {@linkcode FLUSH_BYTES}), and a call that waits polls every socket (its own data and
 * everything else that arrives) until it is done, sleeping in `poll` once nothing has moved for
 * {@linkcode SPIN_MS}.
 * @module
 */

import { copy } from "../../kernels/copy.ts";
import { CommError, failureNotice, noticeError, PeerFailedError } from "../errors.ts";
import { DEFAULT_TIMEOUT_MS, DONE } from "../types.ts";
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
import { type Goodbye, Goodbyes } from "./goodbyes.ts";
import type { CallCheck, Transport } from "./transport.ts";

/** What a frame says, whatever the wire. */
export type Frame =
  /**
   * A message of `total` bytes, or one fragment of it: `length` of its bytes follow the head. A
   * message's fragments are consecutive on a connection; the first starts it.
   */
  | { kind: "data"; tag: number; length: number; total: number; stamp: number }
  /** A stalled receive's call stamp (see `CallCheck.stampOf`). */
  | { kind: "probe"; tag: number; stamp: number }
  /** "The group failed because rank `rank` did", and why. */
  | { kind: "abort"; rank: number; reason: string }
  /** This rank closes its part of the group (goodbyes.ts); no message follows. */
  | ({ kind: "closing" } & Goodbye)
  /** "This rank finished and sends nothing more." */
  | { kind: "bye" }
  /** The peer ended its side without a goodbye, saying why (a WebSocket close code, say). */
  | { kind: "closed"; reason: string }
  /** A keep-alive to answer with a `pong` carrying the same bytes (WebSocket). */
  | { kind: "ping" | "pong"; payload: Uint8Array };

/** A frame format: how frames are laid out on a connection. */
export interface Wire {
  /** Most bytes {@linkcode Wire.write} puts before a payload. */
  readonly maxHeadBytes: number;
  /**
   * Writes `frame` at the start of `into`: all of it but a data frame's payload, which the caller
   * writes next. Returns the bytes written.
   */
  write(into: Uint8Array, frame: Frame): number;
  /**
   * The frame at `at` (0 unless given) of `bytes`, whose bytes run to `end` (their end unless
   * given), from a `size`-rank group, with the bytes its head took (all of a frame but a data
   * frame's payload); undefined while the head is incomplete; why not, if it cannot be one.
   */
  read(
    bytes: Uint8Array,
    size: number,
    at?: number,
    end?: number,
  ): { frame: Frame; bytes: number } | string | undefined;
}

const dataViews = new WeakMap<ArrayBufferLike, DataView>();

/**
 * A DataView of the whole buffer behind `bytes`, made once per buffer: `bytes[i]` is at
 * `bytes.byteOffset + i`. Frames are read and written in each link's two fixed buffers, where a
 * DataView per frame would cost more than parsing the frame.
 */
export function bufferView(bytes: Uint8Array): DataView {
  let view = dataViews.get(bytes.buffer);
  if (!view) dataViews.set(bytes.buffer, view = new DataView(bytes.buffer));
  return view;
}

/** A connection of a finished mesh, with what its reader took past the rendezvous. */
export interface MeshConnection {
  peer: number;
  conn: Deno.TcpConn;
  /** This rank dialed it. */
  dialed: boolean;
  head: Uint8Array;
}

/** How a transport uses one connection of its mesh: its frame format, and which way it carries. */
export interface Route {
  wire: Wire;
  /** It carries this rank's messages to the peer. */
  sends: boolean;
  /** It carries the peer's messages to this rank. */
  receives: boolean;
}

/** One connection of a stream transport: as the mesh handed it over, and its route. */
type Connection = MeshConnection & Route;

/** Options of {@linkcode StreamTransport}. */
export interface StreamTransportOptions {
  /** Milliseconds a receive may go without data before it rejects. @default {30000} */
  timeoutMs?: number;
  /** Socket calls on or off whatever the group's size (as `DCCL_TCP_FFI` says otherwise). */
  socketCalls?: boolean;
}

/** Messages up to this size are copied behind their head and written in one call. */
const COALESCE_BYTES = 16 * 1024;
/**
 * Largest payload of one data frame: a larger message goes as several. Exchanging 4 MiB each way,
 * 2 `tcp` processes took a median 6.1–6.8 ms with whole messages and 2.3–3.7 ms with 1 MiB frames
 * (16 MiB: 21–23 against 13–18 ms). 512 KiB frames did as well at 4 MiB and better at 16 MiB in a
 * trial, but would cut a ring's 1 MiB segments in two; with 1 MiB they stay single frames.
 */
export const FRAGMENT_BYTES = 1024 * 1024;
/**
 * Socket calls: most payload bytes one flush writes to a socket. The rest goes out on the next
 * passes of the polling loop, between reads, so the two ways of an exchange take turns.
 * Written whole, each side copied all of its message into the kernel before it read any of its
 * peer's. Exchanging 2 MiB each way (CLI sendrecv, 2 `tcp` processes, 8 alternating runs) took a
 * median 637 µs against 758 µs; `ws` sendrecv of 1–16 MiB ran faster, and allreduce as fast (a
 * ring's segments of at most 512 KiB still go out whole when posted).
 */
const FLUSH_BYTES = 512 * 1024;
/** Size of a link's buffer for heads and small messages. */
const READ_BUFFER_BYTES = 256 * 1024;
/**
 * Most bytes read into a link's buffer at a time: a head and a small message. The rest of a larger
 * payload is read straight into place; read into the buffer, it was copied out again. A
 * 2^20-float `tcp` allreduce of 2 processes moved 45% of its bytes that way with reads of up to
 * the whole buffer and ran at a median 20.3 Gb/s against 22.1 (8 alternating runs).
 */
const HEAD_READ_BYTES = 64 + COALESCE_BYTES;
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
const BYE: Frame = { kind: "bye" };

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
  /** A payload written after its head: it counts against a flush's {@linkcode FLUSH_BYTES}. */
  payload: boolean;
  settle?: { resolve: () => void; reject: (e: Error) => void };
}

/**
 * One connection: the frame reader's buffer, the write queue, and what each side has said.
 * With socket calls (`fd` known), frames go to the kernel at once from the caller's buffer and
 * what does not fit waits in `outgoing` for the transport's pump; otherwise through Deno's async
 * writes, one after another.
 */
class Link {
  readonly peer: number;
  readonly conn: Deno.TcpConn;
  readonly wire: Wire;
  /** It carries the peer's messages (its goodbye ends them). */
  readonly receives: boolean;
  /** The socket's descriptor, when socket calls drive this link. */
  readonly fd: number | undefined;
  // Reading: frames are parsed out of `buf[start, end)`, except that a payload whose rest has not
  // arrived yet is read straight into place (`into[got, got + due)`: the rest of the frame's part
  // of the message; later frames bring `into[got + due, …)`).
  readonly buf = new Uint8Array(READ_BUFFER_BYTES);
  start = 0;
  end = 0;
  into: Uint8Array = new Uint8Array(0);
  got = 0;
  due = 0;
  /** Tag and stamp of the message whose fragments are arriving. */
  tag = 0;
  stamp = 0;
  /** The last `target()` was the payload itself, not `buf`. */
  direct = false;
  /** Nothing more will be read (the stream ended, failed, or was refused). */
  readDone = false;
  // Writing.
  /** The end of Deno's write queue. */
  tail: Promise<void> = Promise.resolve();
  readonly outgoing: Outgoing[] = [];
  /** Why writes fail from now on (a failed write, or the link closed). */
  writeError?: Error;
  /** Head and small payload, reused (a frame's bytes are copied out if they must wait). */
  readonly scratch: Uint8Array;
  /** This side sent its goodbye (or a failure notice) and writes nothing more. */
  writeClosed = false;
  /** The peer said goodbye. */
  peerDone = false;
  /** The descriptor was closed: no socket call may use it again (the number can be reused). */
  closed = false;
  /** Resolves when the peer's side has ended (end of stream or error). */
  readonly ended: Promise<void>;
  #end!: () => void;

  /** `buf` holds bytes no frame parse has seen yet (the mesh's `head`). */
  unparsed = false;

  constructor(c: Connection, fd: number | undefined) {
    this.peer = c.peer;
    this.conn = c.conn;
    this.wire = c.wire;
    this.receives = c.receives;
    this.fd = fd;
    this.scratch = new Uint8Array(c.wire.maxHeadBytes + COALESCE_BYTES);
    if (c.head?.byteLength) {
      this.buf.set(c.head);
      this.end = c.head.byteLength;
      this.unparsed = true;
    }
    this.ended = new Promise((resolve) => this.#end = resolve);
  }

  /**
   * Where the next bytes read go: straight into the payload once the buffer holds none of it,
   * else into the buffer ({@linkcode HEAD_READ_BYTES} at most).
   */
  target(): Uint8Array {
    this.direct = this.due > 0 && this.start === this.end;
    if (this.direct) return this.#rest(this.into, this.got, this.got + this.due);
    if (this.start === this.end) this.start = this.end = 0;
    else if (this.buf.byteLength - this.end < HEAD_READ_BYTES) {
      this.buf.copyWithin(0, this.start, this.end);
      [this.start, this.end] = [0, this.end - this.start];
    }
    return this.#rest(this.buf, this.end, this.end + HEAD_READ_BYTES);
  }

  /** The first `n` bytes of `scratch`; the view is kept while `n` stays the same (as calls repeat). */
  scratchTo(n: number): Uint8Array {
    if (this.#scratchTo.byteLength !== n) this.#scratchTo = this.scratch.subarray(0, n);
    return this.#scratchTo;
  }
  #scratchTo: Uint8Array = new Uint8Array(0);

  /** `of[at, end)`; the view is kept while it stays the same (polls ask again and again). */
  #rest(of: Uint8Array, at: number, end: number): Uint8Array {
    if (of !== this.#restOf || at !== this.#restAt || end !== this.#restEnd) {
      [this.#restOf, this.#restAt, this.#restEnd] = [of, at, end];
      this.#restView = of.subarray(at, end);
    }
    return this.#restView;
  }
  #restOf?: Uint8Array;
  #restAt = -1;
  #restEnd = -1;
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
    const closed = this.writeError ??= new Error("connection closed");
    for (const w of this.outgoing.splice(0)) w.settle?.reject(closed);
  }
}

/**
 * Message transport over a mesh of TCP connections (see the module docs); `tcp` and `ws` are its
 * wires and meshes.
 */
export abstract class StreamTransport implements Transport {
  abstract readonly name: string;
  /** How this transport uses `c` (called from the constructor: it may read no instance state). */
  protected abstract route(c: MeshConnection): Route;
  readonly rank: number;
  readonly size: number;
  #calls?: CallCheck;
  /** Every connection; `#to[p]` carries messages to p and `#from[p]` brings p's. */
  #links: Link[];
  #to: (Link | undefined)[];
  #from: (Link | undefined)[];
  #inbox: Inbox;
  /** Socket calls, when this transport drives its sockets itself. */
  #sockets: SocketCalls | undefined;
  #failed?: Error;
  #closing = false;
  #timeoutMs: number;
  /** Peers that said goodbye (or whose stream ended). */
  #goodbyes: Goodbyes;
  /** Messages sent to each peer. */
  #sent: number[];
  /** Sleeps in `poll` in flight (socket calls). */
  #sleeps = new Set<Promise<void>>();
  /** The failure notices' way out, once aborted. */
  #noticesSent?: Promise<void>;

  /**
   * Runs over the connections of a `size`-rank mesh (see `connectTcp` and `connectWs` for making
   * them), each read no further than its rendezvous.
   */
  constructor(
    rank: number,
    size: number,
    mesh: readonly MeshConnection[],
    options: StreamTransportOptions = {},
  ) {
    const connections: Connection[] = mesh.map((c) => ({ ...c, ...this.route(c) }));
    this.rank = rank;
    this.size = size;
    for (const c of connections) c.conn.setNoDelay(true);
    // Socket calls drive every link or none.
    let sockets = socketCalls(size, options.socketCalls);
    const fds = connections.map((c) => sockets && socketFd(c.conn));
    if (fds.some((fd) => fd === undefined)) sockets = undefined;
    this.#sockets = sockets;
    this.#links = connections.map((c, i) => new Link(c, sockets && fds[i]));
    this.#to = new Array(size);
    this.#from = new Array(size);
    connections.forEach((c, i) => {
      if (c.sends) this.#to[c.peer] = this.#links[i];
      if (c.receives) this.#from[c.peer] = this.#links[i];
    });
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#goodbyes = new Goodbyes(rank, size);
    this.#sent = new Array(size).fill(0);
    this.#inbox = new Inbox(rank, size, this.#timeoutMs, {
      check: (peer, tag, stamp) => this.#calls?.arrived(peer, tag, stamp),
      abort: (error) => this.abort(error),
      stalled: (peer, tag) => this.#probe(peer, tag),
      // Socket calls read synchronously; Deno's reads keep one in flight into the old buffer.
      retarget: (peer, into) =>
        this.#sockets !== undefined && (this.#from[peer]!.into = into, true),
    });
    if (sockets) {
      this.#watch();
      return;
    }
    for (const link of this.#links) {
      this.#read(link)
        .catch((e) => this.#lost(link, e instanceof Deno.errors.ConnectionReset ? GONE : e))
        .finally(() => link.stopReading());
    }
  }

  get calls(): CallCheck | undefined {
    return this.#calls;
  }

  set calls(calls: CallCheck | undefined) {
    this.#calls = calls;
    const problem = this.#goodbyes.attach(calls);
    if (problem) this.abort(problem);
  }

  send(peer: number, data: Uint8Array, tag: number, stamp: number): Promise<void> {
    if (this.#failed) return Promise.reject(this.#failed);
    const link = this.#to[peer]!;
    if (link.peerDone || link.writeClosed) {
      return Promise.reject(
        new PeerFailedError(peer, `rank ${peer} has finished and closed its connection`),
      );
    }
    // Fragments are queued in order, so the last one's promise settles the send (the others
    // fail with it).
    this.#sent[peer]++;
    const total = data.byteLength;
    let sent: Promise<void> = DONE;
    for (let at = 0;; at += FRAGMENT_BYTES) {
      const end = Math.min(total, at + FRAGMENT_BYTES);
      if (sent !== DONE) sent.catch(() => {});
      const part = end - at === total ? data : data.subarray(at, end);
      sent = this.#frame(link, { kind: "data", tag, length: end - at, total, stamp }, part);
      if (end === total) break;
    }
    return sent === DONE ? sent : sent.catch((e) => {
      throw this.#failed ??
        new PeerFailedError(peer, `sending to rank ${peer} failed: ${e.message}`);
    });
  }

  recv(peer: number, into: Uint8Array, tag: number): Promise<number> {
    const small = into.byteLength <= COALESCE_BYTES;
    return this.#inboxWait((settled) => this.#inbox.post(peer, into, tag, settled), small);
  }

  /** Bytes of messages that arrived before their receive was posted (see `Inbox`). */
  get unexpectedBytes(): number {
    return this.#inbox.unexpectedBytes;
  }

  probe(peers: readonly number[], tag: number): Promise<number> {
    return this.#inboxWait((settled) => this.#inbox.probe(peers, tag, settled), false);
  }

  /**
   * Starts a wait of the inbox; with socket calls, also polls the sockets until it settles. A
   * small receive first reads what the kernel holds already: a message sent while this rank was
   * busy settles it within the call, without a polling loop. (A large one leaves the reading to
   * the loop, after its siblings posted: read now, their messages would land in buffers of their
   * own and be copied.)
   */
  #inboxWait<T>(start: (onSettled?: () => void) => Promise<T>, small: boolean): Promise<T> {
    if (!this.#sockets) return start();
    let settled = false;
    const waiting = start(() => settled = true);
    if (small && !settled) this.#pump();
    if (!settled) this.#drive(() => settled);
    return waiting;
  }

  /** Sends `peer` this rank's stamp for its call with `tag` (see `CallCheck.stampOf`). */
  #probe(peer: number, tag: number): void {
    const stamp = this.#calls?.stampOf(tag);
    const link = this.#to[peer];
    if (stamp === undefined || !link || link.writeClosed) return;
    this.#frame(link, { kind: "probe", tag, stamp }).catch(() => {});
  }

  /** Fails everything here and sends every peer a notice naming the failed rank. */
  abort(error: CommError): void {
    if (this.#failed) return;
    this.#failed = error;
    this.#inbox.fail(error);
    const { failedRank, reason } = failureNotice(error, this.rank);
    const notice: Frame = { kind: "abort", rank: failedRank, reason };
    this.#noticesSent = Promise.all(
      this.#links.map((link) => within(this.#finish(link, notice), FLUSH_MS)),
    ).then(() => {});
    this.#goodbyes.interrupt();
  }

  /**
   * Says goodbye to every peer and waits for theirs (goodbyes.ts). Then ends every connection
   * once queued frames are out, and closes each once the peer's side has ended too (a peer
   * answers the end of a stream by ending its side), so nothing either side sent is lost to a
   * reset. Rejects with what the goodbyes found, or with the failure that aborted this transport.
   */
  async close(): Promise<void> {
    if (!this.#failed) {
      for (let peer = 0; peer < this.size; peer++) {
        const link = this.#to[peer];
        if (!link || link.writeClosed) continue;
        const bye = this.#goodbyes.to(this.#inbox.taken(peer));
        this.#frame(link, { kind: "closing", ...bye }).catch(() => {});
      }
      await this.#goodbyes.wait(this.#timeoutMs, () => this.#failed !== undefined);
      const problem = this.#failed
        ? undefined
        : this.#goodbyes.closing(this.#inbox.unclaimed(), this.#sent);
      if (problem) this.abort(problem);
    }
    this.#closing = true;
    this.#inbox.close();
    await this.#noticesSent;
    if (this.#sockets) {
      this.#drive(() => this.#links.every((l) => l.readDone), performance.now() + FLUSH_MS);
    }
    await Promise.all(this.#links.map(async (link) => {
      await within(this.#finish(link, BYE).then(() => link.ended), FLUSH_MS);
      link.close();
    }));
    // Sleeps in `poll` end within a slice: none outlives the transport.
    await Promise.all(this.#sleeps);
    if (this.#failed) throw this.#failed;
  }

  /** Queues one frame on `link`: its head and payload (coalesced when small). */
  #frame(link: Link, frame: Frame, payload?: Uint8Array): Promise<void> {
    const size = payload?.byteLength ?? 0;
    const coalesce = size <= COALESCE_BYTES;
    if (this.#sockets) {
      return this.#write(link, this.#head(link, frame, payload), coalesce ? undefined : payload);
    }
    const run = link.tail.then(async () => {
      await writeAll(link.conn, this.#head(link, frame, payload));
      if (!coalesce) await writeAll(link.conn, payload!);
    });
    link.tail = run.catch(() => {});
    return run;
  }

  /** `frame`'s head in the link's scratch, followed by the payload when it is small. */
  #head(link: Link, frame: Frame, payload?: Uint8Array): Uint8Array {
    const n = link.wire.write(link.scratch, frame);
    const size = payload?.byteLength ?? 0;
    if (size === 0 || size > COALESCE_BYTES) return link.scratchTo(n);
    copy(link.scratch, payload!, n);
    return link.scratchTo(n + size);
  }

  /**
   * Socket calls: queues a frame (`head` from the link's scratch, then `payload` if it was not
   * coalesced) and writes the queue as far as one flush goes now. Returns {@linkcode DONE}
   * when the frame left within the call (a small one usually does), else a promise that resolves
   * once it is written. What is left of `head` is copied, since the next frame reuses the scratch.
   */
  #write(link: Link, head: Uint8Array, payload?: Uint8Array): Promise<void> {
    if (link.writeError) return Promise.reject(link.writeError);
    const first: Outgoing = { bytes: head, off: 0, payload: false };
    const last = payload ? { bytes: payload, off: 0, payload: true } : first;
    link.outgoing.push(first);
    if (payload) link.outgoing.push(last);
    this.#flush(link);
    if (link.outgoing.length === 0) return link.writeError ? Promise.reject(link.writeError) : DONE;
    // The queue is written in order: `last`, its end, is still in it.
    const written = new Promise<void>((resolve, reject) => last.settle = { resolve, reject });
    if (link.outgoing.includes(first)) {
      first.bytes = head.slice(first.off);
      first.off = 0;
    }
    this.#drive(() => link.outgoing.length === 0);
    return written;
  }

  /** Ends this side's stream after the queued frames; the first call decides the last frame. */
  #finish(link: Link, last: Frame): Promise<void> {
    if (link.writeClosed) return link.tail;
    link.writeClosed = true;
    const done = this.#frame(link, last).then(() => link.conn.closeWrite());
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
    let idleSince = -1;
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
    await null; // the mesh's leftover bytes are parsed once the transport is handed over
    this.#pump();
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
    return this.#links.every((l) => l.closed);
  }

  /** `struct pollfd`s of every open link: readable while it reads, writable while it queues. */
  #pollSet(): Int32Array {
    const set: number[] = [];
    for (const link of this.#links) {
      if (link.closed) continue;
      const events = (link.readDone ? 0 : POLLIN) | (link.outgoing.length > 0 ? POLLOUT : 0);
      if (events) set.push(link.fd!, events);
    }
    return Int32Array.from(set);
  }

  /** One pass over every socket: queued writes out, arrived bytes in. Whether anything moved. */
  #pump(): boolean {
    let moved = false;
    for (const link of this.#links) {
      if (link.closed) continue;
      if (link.outgoing.length > 0 && this.#flush(link)) moved = true;
      if (!link.readDone && this.#drain(link)) moved = true;
    }
    return moved;
  }

  /**
   * Writes the link's queue until the kernel takes no more or {@linkcode FLUSH_BYTES} of payloads
   * have gone. Whether anything moved.
   */
  #flush(link: Link): boolean {
    let moved = false;
    try {
      for (let left = FLUSH_BYTES; link.outgoing.length > 0;) {
        const w = link.outgoing[0];
        if (w.payload && left === 0) return moved;
        const end = w.payload ? Math.min(w.bytes.byteLength, w.off + left) : w.bytes.byteLength;
        const bytes = w.off === 0 && end === w.bytes.byteLength
          ? w.bytes
          : w.bytes.subarray(w.off, end);
        const n = this.#sockets!.send(link.fd!, bytes);
        if (n === WOULD_BLOCK) return moved;
        moved = true;
        if (w.payload) left -= n;
        w.off += n;
        if (w.off < w.bytes.byteLength) continue;
        link.outgoing.shift();
        w.settle?.resolve();
      }
    } catch (e) {
      link.writeError = e as Error; // send() names the peer
      for (const w of link.outgoing.splice(0)) w.settle?.reject(link.writeError);
      return true;
    }
    return moved;
  }

  /**
   * Reads what the link's peer sent: a few reads at most (so writes interleave with a stream), and
   * none past one that completes a posted receive.
   */
  #drain(link: Link): boolean {
    try {
      if (link.unparsed && !this.#consume(link, 0)) return true;
      for (let reads = 0; reads < READS_PER_PUMP; reads++) {
        const into = link.target();
        const n = this.#sockets!.recv(link.fd!, into);
        if (n === WOULD_BLOCK) return reads > 0;
        if (n === 0) {
          this.#ended(link);
          return true;
        }
        const delivered = this.#inbox.delivered;
        if (!this.#consume(link, n)) return true;
        // A short read took all the kernel held: one more would only say it would block.
        if (n < into.byteLength) return true;
        // A completed receive lets its caller post the next before more of the stream is read:
        // read on, the next message would start into a buffer of its own (allocated, page-faulted
        // and copied out again: 2^18-float allreduce of 2 processes, 7 against 19 Gb/s).
        if (this.#inbox.delivered !== delivered) return true;
      }
    } catch (e) {
      this.#lost(link, e instanceof SocketError && e.errno === ECONNRESET ? GONE : e);
      link.stopReading();
    }
    return true;
  }

  /** Deno's reads: the link's frames until its stream ends. */
  async #read(link: Link): Promise<void> {
    await null; // the mesh's leftover bytes are parsed once the transport is handed over
    if (link.unparsed && !this.#consume(link, 0)) return;
    for (;;) {
      const n = await link.conn.read(link.target());
      if (n === null) return this.#ended(link);
      if (!this.#consume(link, n)) return;
    }
  }

  /**
   * Takes `n` bytes just read into `link.target()`: hands payload bytes to the inbox and acts on
   * every complete frame. False once reading must stop (a malformed frame).
   */
  #consume(link: Link, n: number): boolean {
    const peer = link.peer;
    link.unparsed = false;
    if (link.direct) {
      link.got += n;
      link.due -= n;
      this.#inbox.advance(peer, n);
    } else link.end += n;
    for (;;) {
      if (link.due > 0) {
        const take = Math.min(link.end - link.start, link.due);
        if (take === 0) return true;
        copy(link.into, link.buf, link.got, link.start, take);
        link.start += take;
        link.got += take;
        link.due -= take;
        this.#inbox.advance(peer, take);
        continue;
      }
      if (link.end === link.start) return true;
      const read = link.wire.read(link.buf, this.size, link.start, link.end);
      if (read === undefined) return true; // the rest of the head is still coming
      if (typeof read === "string") {
        this.#malformed(link, read);
        return false;
      }
      link.start += read.bytes;
      const f = read.frame;
      if (f.kind === "data") {
        // Whatever of the payload is buffered is copied (the loop's first branch); the rest is
        // read straight into place.
        const problem = this.#dataFrame(link, f);
        if (problem) {
          this.#malformed(link, problem);
          return false;
        }
      } else if (f.kind === "probe") {
        const problem = this.#calls?.arrived(peer, f.tag, f.stamp);
        if (problem) this.abort(problem);
      } else if (f.kind === "abort") {
        this.abort(noticeError(this.rank, peer, f.rank, f.reason));
      } else if (f.kind === "closing") {
        if (link.receives) this.#peerClosing(peer, f);
      } else if (f.kind === "closed") {
        this.#lost(link, f.reason);
      } else if (f.kind === "ping") {
        if (!link.writeClosed) {
          this.#frame(link, { kind: "pong", payload: f.payload }).catch(() => {});
        }
      } else if (f.kind === "bye") {
        // A goodbye: what it sent is delivered, later receives from it fail, and this side
        // ends too (nothing more is owed to a rank that finished).
        link.peerDone = true;
        const why = new PeerFailedError(peer, `rank ${peer} finished and closed its connection`);
        if (link.receives) {
          this.#inbox.closePeer(peer, why);
          this.#goodbyes.heard(peer);
        }
        this.#finish(link, BYE).catch(() => {});
      }
    }
  }

  /**
   * Starts reading the payload of data frame `f`: a message's first fragment begins it in the
   * inbox, a later one goes on where the last ended. Why `f` cannot come next, if it cannot.
   */
  #dataFrame(link: Link, f: Frame & { kind: "data" }): string | undefined {
    // Between frames `due` is 0, so `into[got, …)` is what later frames must bring.
    const left = link.into.byteLength - link.got;
    if (left === 0) {
      if (f.length > f.total) return `a ${f.length}-byte fragment of a ${f.total}-byte message`;
      link.into = this.#inbox.begin(link.peer, f.tag, f.stamp, f.total);
      [link.got, link.tag, link.stamp] = [0, f.tag, f.stamp];
      this.#inbox.advance(link.peer, 0); // marks the peer active (and settles an empty message)
    } else if (f.tag !== link.tag || f.stamp !== link.stamp || f.total !== link.into.byteLength) {
      return `a fragment of another message (tag ${f.tag}) inside one with tag ${link.tag}`;
    } else if (f.length > left) {
      return `a ${f.length}-byte fragment where ${left} bytes of the message remain`;
    }
    link.due = f.length;
    return undefined;
  }

  /** The link's stream ended: mid-message, or without a goodbye, the group has failed. */
  #ended(link: Link): void {
    if (link.got < link.into.byteLength) this.#lost(link, "closed in the middle of a message");
    else if (!link.peerDone) this.#lost(link, GONE);
    link.stopReading();
    if (link.receives) this.#goodbyes.heard(link.peer);
  }

  /**
   * `peer` closes its part of the group: it sends nothing more, and its goodbye is judged
   * against this rank's calls and the messages it sent the peer.
   */
  #peerClosing(peer: number, bye: Goodbye): void {
    const problem = this.#goodbyes.heard(peer, bye, this.#sent[peer]);
    if (problem) this.abort(problem);
    const why = new PeerFailedError(peer, `rank ${peer} finished and closed its communicator`);
    this.#inbox.closePeer(peer, why);
  }

  /** The link's connection ended or failed without a goodbye: the group has failed. */
  #lost(link: Link, what: string | unknown): void {
    if (this.#closing || link.peerDone) return;
    const how = typeof what === "string" ? what : `failed: ${(what as Error).message}`;
    this.abort(new PeerFailedError(link.peer, `connection to rank ${link.peer} ${how}`));
  }

  #malformed(link: Link, problem: string): void {
    this.abort(
      new CommError(`malformed frame from rank ${link.peer}: ${problem}`, {
        failedRank: link.peer,
      }),
    );
    link.close();
  }
}
