/**
 * The polling loop of a stream transport driven by socket calls (socket_calls.ts): nonblocking
 * `send`/`recv` made synchronously. A send reaches the kernel within the call (a large one its
 * first {@linkcode FLUSH_BYTES}), and a call that waits polls every socket (its own data and
 * everything else that arrives) until it is done, sleeping in `poll` once nothing has moved for
 * {@linkcode SPIN_MS}.
 * @module
 */

import { DONE } from "../../primitives/types.ts";
import { crowded } from "../platform/scheduler_calls.ts";
import { POLLIN, POLLOUT, type SocketCalls, SocketError, WOULD_BLOCK } from "./socket_calls.ts";
import { GONE, type Link, type LinkEvents, type Outgoing } from "./stream_link.ts";

/**
 * Most payload bytes one flush writes to a socket. The rest goes out on the next passes of the
 * loop, between reads, so the two ways of an exchange take turns (docs/transports/stream.md,
 * "Socket calls").
 */
const FLUSH_BYTES = 512 * 1024;
/**
 * How long a wait keeps polling its sockets after the last byte moved before it sleeps in `poll`,
 * polls between two clock readings, and reads of one socket per pass.
 */
const SPIN_MS = 1, POLLS_PER_CLOCK = 16, READS_PER_PUMP = 8;
/** How long a wait spins before it blocks in `poll` where runnable threads outnumber cores. */
const CROWDED_SPIN_MS = 0.05;
/** Longest sleep in `poll`, so a wait notices a settled call or a closed transport. */
const POLL_SLICE_MS = 50;
const ECONNRESET = 104;

/** The socket-call loop over every link of one transport. */
export class SocketPump {
  readonly #sockets: SocketCalls;
  readonly #links: readonly Link[];
  readonly #events: LinkEvents;
  /** Sleeps in `poll` in flight. */
  readonly #sleeps = new Set<Promise<void>>();

  constructor(sockets: SocketCalls, links: readonly Link[], events: LinkEvents) {
    this.#sockets = sockets;
    this.#links = links;
    this.#events = events;
  }

  /**
   * Queues a frame (`head` from the link's scratch, then `payload` if it was not coalesced) and
   * writes the queue as far as one flush goes now. Returns {@linkcode DONE} when the frame left
   * within the call (a small one usually does), else a promise that resolves once it is written.
   * What is left of `head` is copied, since the next frame reuses the scratch.
   */
  write(link: Link, head: Uint8Array, payload?: Uint8Array): Promise<void> {
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
    this.drive(() => link.outgoing.length === 0);
    return written;
  }

  /**
   * Pumps every socket until `done()` (or `deadline`, a `performance.now()` time). It polls while
   * data moves and for {@linkcode SPIN_MS} after (a peer that answers within that is heard at
   * once), then waits in `poll` off the JS thread. Never rejects.
   */
  async drive(done: () => boolean, deadline = Infinity): Promise<void> {
    await null; // let sibling calls post (and write) before this one spins
    let idleSince = -1;
    let idle = 0;
    /** Whether the machine has more runnable threads than cores (asked once per idle stretch). */
    let busy: boolean | undefined;
    while (!done() && !this.#closedAll()) {
      if (this.pump(done)) {
        idle = 0;
        idleSince = -1;
        continue;
      }
      if (++idle % POLLS_PER_CLOCK !== 0) continue;
      const now = performance.now();
      if (now > deadline) return;
      if (idleSince < 0) [idleSince, busy] = [now, undefined];
      const idleMs = now - idleSince;
      if (idleMs < SPIN_MS) {
        // On a crowded machine a spinning rank keeps the one it waits for (or other work) from
        // running: it blocks in poll instead, and the kernel wakes it as data arrives.
        if (idleMs < CROWDED_SPIN_MS || !(busy ??= crowded())) continue;
        this.#sockets.pollNow(this.#pollSet(), 1);
        continue;
      }
      await this.#sleep();
      idle = 0;
    }
  }

  /**
   * Reads whatever arrives while no call waits, as Deno's reads would (a goodbye is answered, a
   * failure notice heard, even while this rank computes), until every link is closed.
   */
  async watch(): Promise<void> {
    await null; // the mesh's leftover bytes are parsed once the transport is handed over
    this.pump();
    while (!this.#closedAll()) {
      await this.#sleep();
      this.pump();
    }
  }

  /** Resolves once no sleep in `poll` is in flight (each ends within a slice). */
  async settled(): Promise<void> {
    await Promise.all(this.#sleeps);
  }

  /**
   * One pass over every socket: queued writes out, arrived bytes in. Whether anything moved. The
   * pass ends once `done()` (the caller's call has finished): read on, the peer's next message
   * would arrive before its receive is posted, into a buffer of its own, allocated and copied out
   * again (docs/transports/stream.md, "Socket calls").
   */
  pump(done?: () => boolean): boolean {
    let moved = false;
    for (const link of this.#links) {
      if (done?.()) return moved;
      if (link.closed) continue;
      if (link.outgoing.length > 0 && this.#flush(link)) moved = true;
      if (!link.readDone && !done?.() && this.#drain(link)) moved = true;
    }
    return moved;
  }

  /** Sleeps in `poll` off the JS thread until a socket is ready or a slice has passed. */
  #sleep(): Promise<void> {
    const sleep = this.#sockets.poll(this.#pollSet(), POLL_SLICE_MS);
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
        const n = this.#sockets.send(link.fd!, bytes);
        if (n === WOULD_BLOCK) return moved;
        moved = true;
        if (w.payload) left -= n;
        w.off += n;
        if (w.off < w.bytes.byteLength) continue;
        link.outgoing.shift();
        w.settle?.resolve();
      }
    } catch (e) {
      link.writeError = e as Error; // the transport's send names the peer
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
    const events = this.#events;
    try {
      if (link.unparsed && !link.consume(0, events)) return true;
      for (let reads = 0; reads < READS_PER_PUMP; reads++) {
        const into = link.target();
        const n = this.#sockets.recv(link.fd!, into);
        if (n === WOULD_BLOCK) return reads > 0;
        if (n === 0) {
          events.ended(link);
          return true;
        }
        const delivered = events.inbox.delivered;
        if (!link.consume(n, events)) return true;
        // A short read took all the kernel held: one more would only say it would block.
        if (n < into.byteLength) return true;
        // A completed receive lets its caller post the next before more of the stream is read:
        // read on, the next message would start into a buffer of its own, allocated and copied
        // out again (docs/transports/stream.md, "Socket calls").
        if (events.inbox.delivered !== delivered) return true;
      }
    } catch (e) {
      events.lost(link, e instanceof SocketError && e.errno === ECONNRESET ? GONE : e);
      link.stopReading();
    }
    return true;
  }
}
