/**
 * The engine of the byte-stream transports (`tcp`, `ws`): ranks in separate processes (or hosts)
 * linked by TCP connections (no-delay) that carry frames of a {@linkcode Wire} format
 * (stream_wire.ts). A send writes a frame's head and then the caller's bytes as they are (a small
 * message goes out with its head in one write); a receive reads the payload straight into the
 * posted receive's buffer (into a buffer of its own when none is posted yet, like an unexpected
 * MPI message; stream_link.ts). A message larger than {@linkcode FRAGMENT_BYTES} goes as
 * consecutive data frames of at most that much. Control frames carry stall probes, a failure
 * notice naming the failed rank, and the goodbye of a rank that finished.
 *
 * Bytes move one of two ways, the same frames either way: through Deno's async reads and writes,
 * or, where the C library's socket calls are available, through the polling loop of
 * stream_pump.ts.
 * @module
 */

import { CommError, failureNotice, noticeError, PeerFailedError } from "../../primitives/errors.ts";
import { DEFAULT_TIMEOUT_MS, DONE, type LinkCosts } from "../../primitives/types.ts";
import { InboxTransport } from "../../primitives/transports/inbox_transport.ts";
import { socketCalls, socketFd } from "./socket_calls.ts";
import { COALESCE_BYTES, GONE, Link, type LinkEvents, writeAll } from "./stream_link.ts";
import { SocketPump } from "./stream_pump.ts";
import {
  type Connection,
  FRAGMENT_BYTES,
  type Frame,
  type MeshConnection,
  type Route,
} from "./stream_wire.ts";
import { copy } from "../../kernels/copy.ts";

/** Options of {@linkcode StreamTransport}. */
export interface StreamTransportOptions {
  /** Milliseconds a receive may go without data before it rejects. @default {30000} */
  timeoutMs?: number;
  /** Socket calls on or off whatever the group's size (as `DCCL_TCP_FFI` says otherwise). */
  socketCalls?: boolean;
  /** Each rank's host as an index (`Transport.hosts`). */
  hosts?: readonly number[];
}

/** Milliseconds a finishing or failing rank waits for its last frames to leave. */
const FLUSH_MS = 2000;
const BYE: Frame = { kind: "bye" };

/** A value after `ms` milliseconds, unless `p` settles first. */
function within<T>(p: Promise<T>, ms: number): Promise<T | void> {
  let timer: ReturnType<typeof setTimeout>;
  return Promise.race([p, new Promise<void>((r) => timer = setTimeout(r, ms))])
    .finally(() => clearTimeout(timer));
}

/**
 * Message transport over a mesh of TCP connections (see the module docs); `tcp` and `ws` are its
 * wires and meshes.
 */
export abstract class StreamTransport extends InboxTransport {
  /** How this transport uses `c` (called from the constructor: it may read no instance state). */
  protected abstract route(c: MeshConnection): Route;
  readonly hosts?: readonly number[];
  links?: LinkCosts;
  /** Every connection; `#to[p]` carries messages to p and `#from[p]` brings p's. */
  #links: Link[];
  #to: (Link | undefined)[];
  #from: (Link | undefined)[];
  /** The socket-call loop, when this transport drives its sockets itself. */
  #pump: SocketPump | undefined;
  /** What the links' readers hand this transport. */
  #events: LinkEvents;
  #failed?: Error;
  #closing = false;
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
    const linked = new Set(mesh.map((c) => c.peer));
    super(rank, size, options.timeoutMs ?? DEFAULT_TIMEOUT_MS, {
      stalled: (peer, tag) => this.#probe(peer, tag),
      // Socket calls read synchronously; Deno's reads keep one in flight into the old buffer.
      retarget: (peer, into) => this.#pump !== undefined && (this.#from[peer]!.into = into, true),
    }, (peer) => linked.has(peer));
    this.hosts = options.hosts;
    const connections: Connection[] = mesh.map((c) => ({ ...c, ...this.route(c) }));
    for (const c of connections) c.conn.setNoDelay(true);
    // Socket calls drive every link or none.
    let sockets = socketCalls(size, options.socketCalls);
    const fds = connections.map((c) => sockets && socketFd(c.conn));
    if (fds.some((fd) => fd === undefined)) sockets = undefined;
    this.#links = connections.map((c, i) => new Link(c, sockets && fds[i]));
    this.#to = new Array(size);
    this.#from = new Array(size);
    connections.forEach((c, i) => {
      if (c.sends) this.#to[c.peer] = this.#links[i];
      if (c.receives) this.#from[c.peer] = this.#links[i];
    });
    this.#events = {
      inbox: this.inbox,
      size,
      control: (link, frame) => this.#control(link, frame),
      malformed: (link, problem) => this.#malformed(link, problem),
      ended: (link) => this.#ended(link),
      lost: (link, what) => this.#lost(link, what),
    };
    if (sockets) {
      this.#pump = new SocketPump(sockets, this.#links, this.#events);
      this.#pump.watch();
      return;
    }
    for (const link of this.#links) {
      this.#read(link)
        .catch((e) => this.#lost(link, e instanceof Deno.errors.ConnectionReset ? GONE : e))
        .finally(() => link.stopReading());
    }
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
    this.sent[peer]++;
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

  override recv(peer: number, into: Uint8Array, tag: number): Promise<number> {
    const small = into.byteLength <= COALESCE_BYTES;
    return this.#inboxWait((settled) => this.inbox.post(peer, into, tag, settled), small);
  }

  override peek(peers: readonly number[], tag: number): number | undefined {
    this.#pump?.pump();
    return super.peek(peers, tag);
  }

  /** Bytes of messages that arrived before their receive was posted (see `Inbox`). */
  get unexpectedBytes(): number {
    return this.inbox.unexpectedBytes;
  }

  override probe(peers: readonly number[], tag: number): Promise<number> {
    return this.#inboxWait((settled) => this.inbox.probe(peers, tag, settled), false);
  }

  /**
   * Starts a wait of the inbox; with socket calls, also polls the sockets until it settles. A
   * small receive first reads what the kernel holds already: a message sent while this rank was
   * busy settles it within the call, without a polling loop. (A large one leaves the reading to
   * the loop, after its siblings posted: read now, their messages would land in buffers of their
   * own and be copied.)
   */
  #inboxWait<T>(start: (onSettled?: () => void) => Promise<T>, small: boolean): Promise<T> {
    const pump = this.#pump;
    if (!pump) return start();
    let settled = false;
    const waiting = start(() => settled = true);
    if (small && !settled) pump.pump(() => settled);
    if (!settled) pump.drive(() => settled);
    return waiting;
  }

  /** Sends `peer` this rank's stamp for its call with `tag` (see `CallCheck.stampOf`). */
  #probe(peer: number, tag: number): void {
    const stamp = this.calls?.stampOf(tag);
    const link = this.#to[peer];
    if (stamp === undefined || !link || link.writeClosed) return;
    this.#frame(link, { kind: "probe", tag, stamp }).catch(() => {});
  }

  /** Fails everything here and sends every peer a notice naming the failed rank. */
  abort(error: CommError): void {
    if (this.#failed) return;
    this.#failed = error;
    this.inbox.fail(error);
    const { failedRank, reason } = failureNotice(error, this.rank);
    const notice: Frame = { kind: "abort", rank: failedRank, reason };
    this.#noticesSent = Promise.all(
      this.#links.map((link) => within(this.#finish(link, notice), FLUSH_MS)),
    ).then(() => {});
    this.goodbyes.interrupt();
  }

  /**
   * Says goodbye to every peer and waits for theirs (closing_check.ts). Then ends every connection
   * once queued frames are out, and closes each once the peer's side has ended too (a peer
   * answers the end of a stream by ending its side), so nothing either side sent is lost to a
   * reset. Rejects with what the goodbyes found, or with the failure that aborted this transport.
   */
  async close(): Promise<void> {
    if (!this.#failed) {
      const problem = await this.farewell((peer, bye) => {
        const link = this.#to[peer];
        if (link && !link.writeClosed) {
          this.#frame(link, { kind: "closing", ...bye }).catch(() => {});
        }
      }, () => this.#failed !== undefined);
      if (problem) this.abort(problem);
    }
    this.#closing = true;
    this.inbox.close();
    await this.#noticesSent;
    this.#pump?.drive(() => this.#links.every((l) => l.readDone), performance.now() + FLUSH_MS);
    await Promise.all(this.#links.map(async (link) => {
      await within(this.#finish(link, BYE).then(() => link.ended), FLUSH_MS);
      link.close();
    }));
    // Sleeps in `poll` end within a slice: none outlives the transport.
    await this.#pump?.settled();
    if (this.#failed) throw this.#failed;
  }

  /** Queues one frame on `link`: its head and payload (coalesced when small). */
  #frame(link: Link, frame: Frame, payload?: Uint8Array): Promise<void> {
    const size = payload?.byteLength ?? 0;
    const coalesce = size <= COALESCE_BYTES;
    if (this.#pump) {
      return this.#pump.write(
        link,
        this.#head(link, frame, payload),
        coalesce ? undefined : payload,
      );
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

  /** Ends this side's stream after the queued frames; the first call decides the last frame. */
  #finish(link: Link, last: Frame): Promise<void> {
    if (link.writeClosed) return link.tail;
    link.writeClosed = true;
    const done = this.#frame(link, last).then(() => link.conn.closeWrite());
    link.tail = done.catch(() => {});
    return link.tail;
  }

  /** Deno's reads: the link's frames until its stream ends. */
  async #read(link: Link): Promise<void> {
    await null; // the mesh's leftover bytes are parsed once the transport is handed over
    if (link.unparsed && !link.consume(0, this.#events)) return;
    for (;;) {
      const n = await link.conn.read(link.target());
      if (n === null) return this.#ended(link);
      if (!link.consume(n, this.#events)) return;
    }
  }

  /** A frame other than data from `link`'s peer. */
  #control(link: Link, f: Exclude<Frame, { kind: "data" }>): void {
    const peer = link.peer;
    if (f.kind === "probe") {
      const problem = this.calls?.arrived(peer, f.tag, f.stamp);
      if (problem) this.abort(problem);
    } else if (f.kind === "abort") {
      this.abort(noticeError(this.rank, peer, f.rank, f.reason));
    } else if (f.kind === "closing") {
      if (link.receives) this.peerClosed(peer, f);
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
        this.inbox.closePeer(peer, why);
        this.goodbyes.heard(peer);
      }
      this.#finish(link, BYE).catch(() => {});
    }
  }

  /** The link's stream ended: mid-message, or without a goodbye, the group has failed. */
  #ended(link: Link): void {
    if (link.got < link.into.byteLength) this.#lost(link, "closed in the middle of a message");
    else if (!link.peerDone) this.#lost(link, GONE);
    link.stopReading();
    if (link.receives) this.goodbyes.heard(link.peer);
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
