/**
 * The `shm` transport's messages: one single-producer/single-consumer ring of slots per ordered
 * pair of ranks (shm_layout.ts). Progress is driven by whichever call is waiting: every wait
 * advances all pending sends and receives of this rank, and a message nobody has asked for yet is
 * drained into a side buffer, so two ranks that both send first never deadlock.
 *
 * A large message that lies in its sender's heap goes directly: one slot says where, the receiver
 * copies it from the sender's heap into its receive (or a side buffer), and the send is done once
 * the receiver says it has (`copied`), so its bytes are copied once, not into slots and out.
 * @module
 */

import type { CommError } from "../errors.ts";
import { MismatchError } from "../errors.ts";
import type { Unclaimed } from "./closing_check.ts";
import type { ShmControl } from "./shm_control.ts";
import { heapBuffer, memoryOf } from "../memory/heap.ts";
import { copy } from "../../kernels/copy.ts";
import {
  loadStamp,
  RING_COPIED,
  RING_HEAD,
  RING_SLOT_HEADERS,
  RING_TAIL,
  RING_TAKEN,
  ringOffset,
  SLOT_HEADER_WORDS,
  slotBytes,
  slotDataOffset,
  SLOTS,
  storeStamp,
} from "./shm_layout.ts";

/**
 * Slot header flags (word 3): the first slot of a message, a probe (see `#probe`), a direct
 * message (its slot holds the byte offset of its bytes in the sender's heap, word 6).
 */
const FIRST_SLOT = 1, PROBE_SLOT = 2, DIRECT_SLOT = 4;
/** Messages from this many bytes in the sender's heap go directly (see the module docs). */
export const DIRECT_FROM_BYTES = 1 << 20;

interface SendRequest {
  peer: number;
  tag: number;
  stamp: number;
  /** A probe: no data, only the stamp for the receiver's check (see `CallCheck.stampOf`). */
  probe?: boolean;
  data: Uint8Array;
  offset: number;
  started: boolean;
  done: boolean;
  /** A direct message: its offset in this rank's heap, and the `copied` count that settles it. */
  direct?: { heapOffset: number; settlesAt?: number };
}

interface RecvRequest {
  peer: number;
  tag: number;
  into: Uint8Array;
  done: boolean;
  /** The sender's stamp, once matched. */
  stamp: number;
  error?: Error;
}

/** A message being copied out of a ring, into a posted receive or a side buffer. */
interface Incoming {
  tag: number;
  target: Uint8Array;
  offset: number;
  request?: RecvRequest;
  unexpected?: Unexpected;
}

interface Unexpected {
  tag: number;
  stamp: number;
  data: Uint8Array;
  complete: boolean;
  waiter?: RecvRequest;
}

/** One direction of one pair: a ring of slots in shared memory. */
class Ring {
  readonly words: Int32Array;
  readonly slots: Uint8Array[];
  constructor(buffer: SharedArrayBuffer, offset: number, size: number) {
    this.words = new Int32Array(buffer, offset, RING_SLOT_HEADERS + SLOTS * SLOT_HEADER_WORDS);
    this.slots = Array.from(
      { length: SLOTS },
      (_, i) => new Uint8Array(buffer, offset + slotDataOffset(size, i), slotBytes(size)),
    );
  }

  /** Whether every slot written has been read. */
  get empty(): boolean {
    return Atomics.load(this.words, RING_HEAD) === Atomics.load(this.words, RING_TAIL);
  }
}

/** One rank's rings: its sends, receives and probes. */
export class ShmRings {
  /** Messages sent to each peer. */
  readonly sent: number[];
  readonly #control: ShmControl;
  readonly #abort: (error: CommError) => void;
  readonly #slotBytes: number;
  readonly #outbound: (Ring | undefined)[];
  readonly #inbound: (Ring | undefined)[];
  readonly #sends: SendRequest[][];
  readonly #recvs: RecvRequest[][];
  readonly #incoming: (Incoming | undefined)[];
  readonly #unexpected: Unexpected[][];
  /** Direct sends to each peer waiting for it to copy them, in the order sent. */
  readonly #copying: SendRequest[][];
  /** Direct messages sent to each peer so far (what its `copied` count reaches for the last). */
  readonly #directSent: number[];
  /** Where the next probe starts scanning its peers. */
  #probeStart = 0;
  /** Sends and receives of this rank completed so far (see `#complete`). */
  #completions = 0;

  /** The rings of `control`'s rank in `rings`; `abort` fails the rank when a message shows a problem. */
  constructor(
    control: ShmControl,
    memory: WebAssembly.Memory,
    abort: (error: CommError) => void,
  ) {
    const { rank, size } = control;
    const rings = heapBuffer(memory);
    this.#control = control;
    this.#abort = abort;
    this.#slotBytes = slotBytes(size);
    const peers = Array.from({ length: size }, (_, p) => p);
    this.#outbound = peers.map((p) =>
      p === rank ? undefined : new Ring(rings, ringOffset(size, rank, p), size)
    );
    this.#inbound = peers.map((p) =>
      p === rank ? undefined : new Ring(rings, ringOffset(size, p, rank), size)
    );
    this.#sends = peers.map(() => []);
    this.#recvs = peers.map(() => []);
    this.#incoming = peers.map(() => undefined);
    this.#unexpected = peers.map(() => []);
    this.#copying = peers.map(() => []);
    this.#directSent = peers.map(() => 0);
    this.sent = peers.map(() => 0);
  }

  async send(peer: number, data: Uint8Array, tag: number, stamp: number): Promise<void> {
    const request: SendRequest = { peer, tag, stamp, data, offset: 0, started: false, done: false };
    const heap = this.#control.heaps[this.#control.rank];
    if (data.byteLength >= DIRECT_FROM_BYTES && memoryOf(data.buffer) === heap) {
      request.direct = { heapOffset: data.byteOffset };
    }
    this.sent[peer]++;
    this.#sends[peer].push(request);
    await null; // let sibling calls post before this one blocks
    const to = this.#control.ids[peer];
    await this.#complete(request, peer, () => `send of ${data.byteLength} bytes to rank ${to}`);
  }

  async recv(peer: number, into: Uint8Array, tag: number): Promise<number> {
    const request: RecvRequest = { peer, tag, into, done: false, stamp: 0 };
    const early = this.#unexpected[peer].find((u) => u.tag === tag && !u.waiter);
    if (early) {
      early.waiter = request;
      this.#settleUnexpected(peer, early);
    } else {
      this.#recvs[peer].push(request);
    }
    await null;
    await this.#complete(
      request,
      peer,
      () => `receive of ${into.byteLength} bytes from rank ${this.#control.ids[peer]} (tag ${tag})`,
      () => this.#probe(peer, tag),
    );
    if (request.error) throw request.error;
    return request.stamp;
  }

  async probe(peers: readonly number[], tag: number): Promise<number> {
    await null;
    // Peers are scanned from a rotating start so that one busy sender cannot starve the rest.
    const start = this.#probeStart++;
    let found = -1;
    this.#control.waitUntil(
      () => {
        for (let i = 0; i < peers.length && found < 0; i++) {
          const p = peers[(start + i) % peers.length];
          if (this.#unexpected[p].some((u) => u.tag === tag && !u.waiter)) found = p;
        }
        return found >= 0;
      },
      () => `a message (tag ${tag}) from any of ranks ${peers.join(", ")}`,
      peers.length === 1 ? peers[0] : undefined,
    );
    return found;
  }

  /** The first of `peers` with a message of `tag` that no receive claimed, after one pass. */
  peek(peers: readonly number[], tag: number): number | undefined {
    this.progress();
    this.#control.checkAbort();
    return peers.find((p) => this.#unexpected[p].some((u) => u.tag === tag && !u.waiter));
  }

  /** How many of this rank's messages `peer`'s receives took. */
  taken(peer: number): number {
    return Atomics.load(this.#outbound[peer]!.words, RING_TAKEN);
  }

  /** `peer` has closed and everything it sent this rank has been read. */
  gone(peer: number): boolean {
    return this.#control.closed(peer) && !this.#incoming[peer] && this.#inbound[peer]!.empty;
  }

  /** Drops the sends and receives still pending (the rank is closing). */
  clear(): void {
    this.#sends.forEach((q) => q.length = 0);
    this.#recvs.forEach((q) => q.length = 0);
    this.#copying.forEach((q) => q.length = 0);
  }

  /** A message some peer sent that no receive took: still in a ring, or drained aside. */
  unclaimed(): Unclaimed | undefined {
    for (let p = 0; p < this.#control.size; p++) {
      const u = this.#unexpected[p].find((u) => !u.waiter);
      if (u) return { peer: p, tag: u.tag, stamp: u.stamp };
      const ring = this.#inbound[p];
      if (!ring || ring.empty) continue;
      const h = RING_SLOT_HEADERS +
        (Atomics.load(ring.words, RING_TAIL) & (SLOTS - 1)) * SLOT_HEADER_WORDS;
      return { peer: p, tag: ring.words[h], stamp: loadStamp(ring.words, h + 4) };
    }
    return undefined;
  }

  /** One pass over every peer's rings. Returns whether anything moved. */
  progress = (): boolean => {
    let moved = false;
    for (let p = 0; p < this.#control.size; p++) {
      if (p === this.#control.rank) continue;
      if (this.#sends[p].length > 0 && this.#pushSends(p)) moved = true;
      if (this.#copying[p].length > 0 && this.#settleCopied(p)) moved = true;
      if (this.#pullRecvs(p)) moved = true;
    }
    return moved;
  };

  /** Settles the direct sends to `peer` it has copied. Whether any were. */
  #settleCopied(peer: number): boolean {
    const copied = Atomics.load(this.#outbound[peer]!.words, RING_COPIED);
    const queue = this.#copying[peer];
    let moved = false;
    while (queue.length > 0 && ((copied - queue[0].direct!.settlesAt!) | 0) >= 0) {
      queue.shift()!.done = true;
      this.#completions++;
      moved = true;
    }
    return moved;
  }

  /**
   * Blocks until `request` (with `peer`) is done, returning to the event loop whenever another
   * operation of this rank completes meanwhile, so that its caller can go on (and post what this
   * one's peer may be waiting for) before this wait blocks again. Throws once `peer` has closed
   * without it.
   */
  async #complete(
    request: { done: boolean },
    peer: number,
    describe: () => string,
    stalled?: () => void,
  ): Promise<void> {
    for (;;) {
      const seen = this.#completions;
      const over = () => request.done || this.#completions !== seen || this.gone(peer);
      this.#control.waitUntil(over, describe, peer, stalled);
      if (request.done) return;
      if (this.gone(peer)) throw this.#control.peerGone(peer, describe());
      await null;
    }
  }

  /** Queues a probe of `peer` with this rank's stamp for its call with `tag`. */
  #probe(peer: number, tag: number): void {
    const stamp = this.#control.calls?.stampOf(tag);
    if (stamp === undefined) return;
    const data = new Uint8Array(0);
    this.#sends[peer].push({
      peer,
      tag,
      stamp,
      probe: true,
      data,
      offset: 0,
      started: false,
      done: false,
    });
  }

  #pushSends(peer: number): boolean {
    const ring = this.#outbound[peer]!;
    const words = ring.words;
    const queue = this.#sends[peer];
    let moved = false;
    let head = Atomics.load(words, RING_HEAD);
    while (queue.length > 0 && ((head - Atomics.load(words, RING_TAIL)) | 0) < SLOTS) {
      const req = queue[0];
      const slot = head & (SLOTS - 1);
      if (req.direct) {
        const h = RING_SLOT_HEADERS + slot * SLOT_HEADER_WORDS;
        words[h] = req.tag;
        words[h + 1] = req.data.byteLength;
        words[h + 2] = 0;
        words[h + 3] = FIRST_SLOT | DIRECT_SLOT;
        storeStamp(words, h + 4, req.stamp);
        words[h + 6] = req.direct.heapOffset;
        req.direct.settlesAt = this.#directSent[peer] = (this.#directSent[peer] + 1) | 0;
        head = (head + 1) | 0;
        Atomics.store(words, RING_HEAD, head);
        moved = true;
        queue.shift();
        this.#copying[peer].push(req);
        continue;
      }
      const chunk = Math.min(this.#slotBytes, req.data.byteLength - req.offset);
      if (chunk > 0) copy(ring.slots[slot], req.data, 0, req.offset, chunk);
      const h = RING_SLOT_HEADERS + slot * SLOT_HEADER_WORDS;
      words[h] = req.tag;
      words[h + 1] = req.data.byteLength;
      words[h + 2] = chunk;
      words[h + 3] = req.probe ? PROBE_SLOT : req.started ? 0 : FIRST_SLOT;
      if (!req.started) storeStamp(words, h + 4, req.stamp);
      req.started = true;
      req.offset += chunk;
      head = (head + 1) | 0;
      Atomics.store(words, RING_HEAD, head);
      moved = true;
      if (req.offset >= req.data.byteLength) {
        req.done = true;
        this.#completions++;
        queue.shift();
      }
    }
    if (moved) this.#control.ring(peer);
    return moved;
  }

  #pullRecvs(peer: number): boolean {
    const ring = this.#inbound[peer]!;
    const words = ring.words;
    let tail = Atomics.load(words, RING_TAIL);
    if (Atomics.load(words, RING_HEAD) === tail) return false;
    while (Atomics.load(words, RING_HEAD) !== tail) {
      const slot = tail & (SLOTS - 1);
      const h = RING_SLOT_HEADERS + slot * SLOT_HEADER_WORDS;
      const chunk = words[h + 2];
      if (words[h + 3] === PROBE_SLOT) {
        const problem = this.#control.calls?.arrived(peer, words[h], loadStamp(words, h + 4));
        if (problem) this.#abort(problem);
        tail = (tail + 1) | 0;
        Atomics.store(words, RING_TAIL, tail);
        continue;
      }
      let cur = this.#incoming[peer];
      if (!cur) {
        const stamp = loadStamp(words, h + 4);
        cur = this.#incoming[peer] = this.#startIncoming(peer, words[h], words[h + 1], stamp);
      }
      if (words[h + 3] & DIRECT_SLOT) {
        const total = words[h + 1];
        // The offset is unsigned (a heap holds up to 4 GiB).
        const at = words[h + 6] >>> 0;
        const from = new Uint8Array(heapBuffer(this.#control.heaps[peer]), at, total);
        copy(cur.target, from);
        cur.offset = total;
        Atomics.add(words, RING_COPIED, 1);
      } else {
        if (chunk > 0) copy(cur.target, ring.slots[slot], cur.offset, 0, chunk);
        cur.offset += chunk;
      }
      tail = (tail + 1) | 0;
      Atomics.store(words, RING_TAIL, tail);
      if (cur.offset >= cur.target.byteLength) {
        this.#incoming[peer] = undefined;
        if (cur.request) {
          cur.request.done = true;
          this.#completions++;
          Atomics.add(words, RING_TAKEN, 1);
        }
        if (cur.unexpected) {
          cur.unexpected.complete = true;
          this.#settleUnexpected(peer, cur.unexpected);
        }
      }
    }
    this.#control.ring(peer);
    return true;
  }

  #startIncoming(peer: number, tag: number, total: number, stamp: number): Incoming {
    const problem = this.#control.calls?.arrived(peer, tag, stamp);
    if (problem) this.#abort(problem); // drained all the same; the next wait throws
    const posted = this.#recvs[peer];
    const i = posted.findIndex((r) => r.tag === tag);
    if (i >= 0) {
      const request = posted.splice(i, 1)[0];
      request.stamp = stamp;
      if (request.into.byteLength === total) {
        return { tag, target: request.into, offset: 0, request };
      }
      // Drain the message anyway so the ring stays usable, then fail the receive.
      request.error = this.#wrongLength(peer, tag, request.into.byteLength, total);
      return { tag, target: new Uint8Array(total), offset: 0, request };
    }
    const unexpected: Unexpected = { tag, stamp, data: new Uint8Array(total), complete: false };
    this.#unexpected[peer].push(unexpected);
    return { tag, target: unexpected.data, offset: 0, unexpected };
  }

  #settleUnexpected(peer: number, u: Unexpected): void {
    const req = u.waiter;
    if (!u.complete || !req) return;
    const list = this.#unexpected[peer];
    list.splice(list.indexOf(u), 1);
    req.stamp = u.stamp;
    if (u.data.byteLength === req.into.byteLength) req.into.set(u.data);
    else req.error = this.#wrongLength(peer, u.tag, req.into.byteLength, u.data.byteLength);
    req.done = true;
    this.#completions++;
    Atomics.add(this.#inbound[peer]!.words, RING_TAKEN, 1);
  }

  #wrongLength(peer: number, tag: number, expected: number, sent: number): MismatchError {
    const { ids, rank } = this.#control;
    return new MismatchError(
      `Rank ${ids[rank]} expected ${expected} bytes from rank ${ids[peer]} (tag ${tag}) ` +
        `but rank ${ids[peer]} sent ${sent}: counts or dtypes differ between ranks`,
      { failedRank: ids[peer] },
    );
  }
}
