/**
 * One connection of a byte-stream transport (stream.ts): its reader, which parses frames out of
 * a buffer of its own and reads payloads straight into the inbox's buffers, and its write queue.
 * @module
 */

import { copy } from "../../kernels/copy.ts";
import type { Inbox } from "../../primitives/transports/inbox.ts";
import { type Connection, FRAGMENT_BYTES, type Frame, type Wire } from "./stream_wire.ts";

/** Messages up to this size are copied behind their head and written in one call. */
export const COALESCE_BYTES = 16 * 1024;
/** Size of a link's buffer for heads and small messages. */
const READ_BUFFER_BYTES = 256 * 1024;
/**
 * Most bytes read into a link's buffer at a time: a head and a small message. The rest of a larger
 * payload is read straight into place: read into the buffer, it would be copied out again
 * (docs/transports/stream.md, "Reading").
 */
const HEAD_READ_BYTES = 64 + COALESCE_BYTES;

/** How a connection that ends without a goodbye (end of stream or reset) is described. */
export const GONE = "closed (its process exited or was killed)";

/**
 * Where a link's reader hands what it finds: payloads to the inbox, everything else to the
 * transport.
 */
export interface LinkEvents {
  readonly inbox: Inbox;
  /** Ranks in the group (frames name ranks below it). */
  readonly size: number;
  /** A frame other than data from `link`'s peer. */
  control(link: Link, frame: Exclude<Frame, { kind: "data" }>): void;
  /** `link`'s peer sent something that cannot come next; reading stops. */
  malformed(link: Link, problem: string): void;
  /** `link`'s stream ended. */
  ended(link: Link): void;
  /** `link`'s connection failed (`what`: how, or the error). */
  lost(link: Link, what: string | unknown): void;
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

/** Bytes queued for the kernel (socket calls only); a frame's last piece settles its promise. */
export interface Outgoing {
  bytes: Uint8Array;
  off: number;
  /** A payload written after its head: it counts against a flush's bytes (stream_pump.ts). */
  payload: boolean;
  settle?: { resolve: () => void; reject: (e: Error) => void };
}

/**
 * One connection: the frame reader's buffer, the write queue, and what each side has said.
 * With socket calls (`fd` known), frames go to the kernel at once from the caller's buffer and
 * what does not fit waits in `outgoing` for the transport's pump; otherwise through Deno's async
 * writes, one after another.
 */
export class Link {
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

  /**
   * Takes `n` bytes just read into {@linkcode Link.target}: hands payload bytes to the inbox and
   * every other complete frame to `sink`. False once reading must stop (a malformed frame).
   */
  consume(n: number, sink: LinkEvents): boolean {
    const peer = this.peer;
    const inbox = sink.inbox;
    this.unparsed = false;
    if (this.direct) {
      this.got += n;
      this.due -= n;
      inbox.advance(peer, n);
    } else this.end += n;
    for (;;) {
      if (this.due > 0) {
        const take = Math.min(this.end - this.start, this.due);
        if (take === 0) return true;
        copy(this.into, this.buf, this.got, this.start, take);
        this.start += take;
        this.got += take;
        this.due -= take;
        inbox.advance(peer, take);
        continue;
      }
      if (this.end === this.start) return true;
      const read = this.wire.read(this.buf, sink.size, this.start, this.end);
      if (read === undefined) return true; // the rest of the head is still coming
      if (typeof read === "string") {
        sink.malformed(this, read);
        return false;
      }
      this.start += read.bytes;
      const f = read.frame;
      if (f.kind === "data") {
        // Whatever of the payload is buffered is copied (the loop's first branch); the rest is
        // read straight into place.
        const problem = this.#dataFrame(f, inbox);
        if (problem) {
          sink.malformed(this, problem);
          return false;
        }
      } else sink.control(this, f);
    }
  }

  /**
   * Starts reading the payload of data frame `f`: a message's first fragment begins it in the
   * inbox, a later one goes on where the last ended. Why `f` cannot come next, if it cannot.
   */
  #dataFrame(f: Frame & { kind: "data" }, inbox: Inbox): string | undefined {
    if (f.length > FRAGMENT_BYTES) {
      return `a ${f.length}-byte frame: frames carry at most ${FRAGMENT_BYTES} bytes`;
    }
    // Between frames `due` is 0, so `into[got, …)` is what later frames must bring.
    const left = this.into.byteLength - this.got;
    if (left === 0) {
      if (f.length > f.total) return `a ${f.length}-byte fragment of a ${f.total}-byte message`;
      this.into = inbox.begin(this.peer, f.tag, f.stamp, f.total);
      [this.got, this.tag, this.stamp] = [0, f.tag, f.stamp];
      inbox.advance(this.peer, 0); // marks the peer active (and settles an empty message)
    } else if (f.tag !== this.tag || f.stamp !== this.stamp || f.total !== this.into.byteLength) {
      return `a fragment of another message (tag ${f.tag}) inside one with tag ${this.tag}`;
    } else if (f.length > left) {
      return `a ${f.length}-byte fragment where ${left} bytes of the message remain`;
    }
    this.due = f.length;
    return undefined;
  }

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
