/**
 * The `shm` transport: Web Workers exchanging bytes through SharedArrayBuffer rings, synchronised
 * with Atomics. Waiting spins briefly and then sleeps on a per-rank futex word (DESIGN.md: pure
 * spinning collapses once ranks outnumber cores). It also gives direct algorithms access to every
 * peer's heap ({@linkcode SharedAccess}).
 *
 * Progress is driven by whichever call is waiting: every wait advances all pending sends and
 * receives of this rank, and a message nobody has asked for yet is drained into a side buffer, so
 * two ranks that both send first never deadlock.
 * @module
 */

import {
  type CommError,
  CommTimeoutError,
  failureNotice,
  MismatchError,
  noticeError,
} from "../errors.ts";
import { heapBuffer, memoryOf } from "../memory/heap.ts";
import {
  DEFAULT_TIMEOUT_MS,
  type Dtype,
  DTYPE_INFO,
  dtypeOf,
  DTYPES,
  makeView,
  type TypedArray,
} from "../types.ts";
import { type Goodbye, Goodbyes, type Unclaimed } from "./goodbyes.ts";
import { STALL_PROBE_MS } from "./inbox.ts";
import { coreYielder } from "./yield_core.ts";
import { heavyFence } from "./heavy_fence.ts";
import { copy } from "../../kernels/copy.ts";
import type { CallCheck, SharedAccess, Transport, WorkersTransport } from "./transport.ts";
import {
  createShmSetup,
  CTRL,
  EAGER_INLINE_BYTES,
  loadStamp,
  PIPE_SLOTS,
  PIPE_WORD,
  raiseAbort,
  RANK_WORD,
  readAbort,
  RING_HEAD,
  RING_SLOT_HEADERS,
  RING_TAIL,
  RING_TAKEN,
  ringOffset,
  type ShmSetup,
  shmSetupBytes,
  SLOT_HEADER_WORDS,
  slotBytes,
  slotDataOffset,
  SLOTS,
  storeStamp,
} from "./shm_layout.ts";

/**
 * How long a wait spins before it sleeps. When every rank has a core, the spin must outlast a
 * sleeping peer's wake-up (0.3–1 ms on a VM), or two ranks fall into a convoy in which every op
 * costs one wake-up; when ranks outnumber cores a spinning rank steals the core its peer needs, so
 * it does not spin (it yields, then sleeps).
 */
function spinMs(size: number): number {
  return oversubscribed(size) ? 0 : 2;
}
const oversubscribed = (size: number) => size > navigator.hardwareConcurrency;
/** How long a wait of oversubscribed ranks yields its core (when it can) before it sleeps. */
const YIELD_MS = 5;
/** Polls between clock readings while spinning (a poll is ~50-100 ns). */
const POLLS_PER_CLOCK = 64;
/** Longest single sleep, so aborts and timeouts are noticed even without a wake-up. */
const SLEEP_SLICE_MS = 50;
/** Payload bytes of one eager slot (small allreduce and friends). */
const EAGER_BYTES = 16 * 1024;
/** Payload bytes of one pipeline slot: bcast and reduce up to this size do not wait for readers. */
const PIPE_BYTES = 4 * 1024;
/** Pipelined calls between two publications of a rank's progress (≤ PIPE_SLOTS / 2). */
const PIPE_DONE_EVERY = 8;
/** FNV-1a's offset basis and prime: the digest of pipelined calls. */
const DIGEST_SEED = 0x811c9dc5 | 0, DIGEST_PRIME = 0x01000193;
/** Stamp of the joining barrier: every rank's is 0, the stamp of no call. */
const JOIN_STAMP = 0;
/** Slot header flags (word 3): the first slot of a message, a probe (see `#probe`). */
const FIRST_SLOT = 1, PROBE_SLOT = 2;

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
}

/** Options of {@linkcode ShmTransport}. */
export interface ShmTransportOptions {
  /** Milliseconds a wait may go without progress before it rejects. @default {30000} */
  timeoutMs?: number;
}

/** Shared-memory transport between workers of one process. */
export class ShmTransport implements Transport, SharedAccess {
  readonly name = "shm" as const;
  readonly rank: number;
  readonly size: number;
  readonly eagerBytes = EAGER_BYTES;
  readonly pipeBytes = PIPE_BYTES;
  readonly shared: SharedAccess = this;
  #calls?: CallCheck;
  #goodbyes: Goodbyes;
  /** Messages sent to each peer. */
  #sent: number[];

  #ctrl: Int32Array;
  #control: SharedArrayBuffer;
  #heaps: WebAssembly.Memory[];
  #outbound: (Ring | undefined)[];
  #inbound: (Ring | undefined)[];
  #sends: SendRequest[][];
  #recvs: RecvRequest[][];
  #incoming: (Incoming | undefined)[];
  #unexpected: Unexpected[][];
  /** Where the next probe starts scanning its peers. */
  #probeStart = 0;
  /** Sends and receives of this rank completed so far (see `#complete`). */
  #completions = 0;
  #timeoutMs: number;
  #spinMs: number;
  #yieldCore?: () => void;
  /** Set where plain stores publish (heavy_fence.ts); run by a rank about to sleep. */
  #heavyFence = heavyFence();
  #slotBytes: number;
  #arriveSeq = 0;
  #eagerViews: (TypedArray[] | undefined)[] = [];
  /** The current pipelined call: its number (the same on every rank) and stamp. */
  #pipeSeq = 0;
  #pipeStamp = 0;
  /** Digest of the stamps of the pipelined calls since the last arrival (checked there). */
  #digest = DIGEST_SEED;
  /** Views of pipeline slots, by rank × slot; kept while calls repeat the shape. */
  #pipeViews: (TypedArray | undefined)[] = [];
  #aborted?: Error;

  /**
   * Connects rank `rank` of `heaps.length` ranks. `heaps[r]` is rank r's heap memory;
   * `eagerOffset` is where this rank's two eager slots live in its own heap.
   */
  constructor(
    rank: number,
    setup: ShmSetup & { heaps: WebAssembly.Memory[]; eagerOffset: number },
    options: ShmTransportOptions = {},
  ) {
    const size = setup.heaps.length;
    this.rank = rank;
    this.size = size;
    this.#control = setup.control;
    this.#ctrl = new Int32Array(setup.control);
    this.#heaps = setup.heaps;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#spinMs = spinMs(size);
    if (oversubscribed(size)) this.#yieldCore = coreYielder();
    this.#slotBytes = slotBytes(size);
    const peers = Array.from({ length: size }, (_, p) => p);
    this.#outbound = peers.map((p) =>
      p === rank ? undefined : new Ring(setup.rings, ringOffset(size, rank, p), size)
    );
    this.#inbound = peers.map((p) =>
      p === rank ? undefined : new Ring(setup.rings, ringOffset(size, p, rank), size)
    );
    this.#sends = peers.map(() => []);
    this.#recvs = peers.map(() => []);
    this.#incoming = peers.map(() => undefined);
    this.#unexpected = peers.map(() => []);
    this.#goodbyes = new Goodbyes(rank, size);
    this.#sent = peers.map(() => 0);
    Atomics.store(this.#ctrl, this.#word(rank, RANK_WORD.EAGER_OFFSET), setup.eagerOffset);
    // Joining is collective: a rank's first eager exchange reads every peer's slot offset, so no
    // rank may start before all have published theirs.
    this.barrier(JOIN_STAMP);
  }

  /** Bytes each rank must reserve in its heap for eager slots. */
  static readonly EAGER_AREA_BYTES = 2 * EAGER_BYTES + PIPE_SLOTS * PIPE_BYTES;

  get calls(): CallCheck | undefined {
    return this.#calls;
  }

  set calls(calls: CallCheck | undefined) {
    this.#calls = calls;
    this.#goodbyes.attach(calls);
  }

  async send(peer: number, data: Uint8Array, tag: number, stamp: number): Promise<void> {
    const request: SendRequest = { peer, tag, stamp, data, offset: 0, started: false, done: false };
    this.#sent[peer]++;
    this.#sends[peer].push(request);
    await null; // let sibling calls post before this one blocks
    await this.#complete(request, peer, () => `send of ${data.byteLength} bytes to rank ${peer}`);
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
      () => `receive of ${into.byteLength} bytes from rank ${peer} (tag ${tag})`,
      () => this.#probe(peer, tag),
    );
    if (request.error) throw request.error;
    return request.stamp;
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
      const over = () => request.done || this.#completions !== seen || this.#gone(peer);
      this.#waitUntil(over, describe, peer, stalled);
      if (request.done) return;
      if (this.#gone(peer)) throw this.#peerGone(peer, describe());
      await null;
    }
  }

  /** `peer` has closed and everything it sent this rank has been read. */
  #gone(peer: number): boolean {
    if (!this.#closed(peer) || this.#incoming[peer]) return false;
    const words = this.#inbound[peer]!.words;
    return Atomics.load(words, RING_HEAD) === Atomics.load(words, RING_TAIL);
  }

  /** The error of a wait (for `what`) on `peer`, which closed: what its goodbye shows. */
  #peerGone(peer: number, what: string): CommError {
    return this.#goodbyes.heard(peer, this.#goodbyeOf(peer), this.#sent[peer]) ??
      new MismatchError(
        `Rank ${this.rank} waited for ${what} but rank ${peer} had closed its communicator`,
        { failedRank: peer },
      );
  }

  /** The goodbye `peer` published when it closed. */
  #goodbyeOf(peer: number): Goodbye {
    const calls = this.#ctrl[this.#word(peer, RANK_WORD.CLOSED_CALLS)];
    const digest = this.#ctrl[this.#word(peer, RANK_WORD.CLOSED_DIGEST)] >>> 0;
    const last = loadStamp(this.#ctrl, this.#word(peer, RANK_WORD.CLOSED_LAST));
    const taken = Atomics.load(this.#outbound[peer]!.words, RING_TAKEN);
    return { summary: calls === 0 ? undefined : { calls: calls - 1, digest, last }, taken };
  }

  async probe(peers: readonly number[], tag: number): Promise<number> {
    await null;
    // Peers are scanned from a rotating start so that one busy sender cannot starve the rest.
    const start = this.#probeStart++;
    let found = -1;
    this.#waitUntil(
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

  barrier(stamp: number): void {
    this.#arriveAll(stamp);
  }

  /**
   * One arrival: publishes `stamp` and this rank's next arrival number, waits until every rank
   * has arrived as far, and checks that all arrived with the same stamp. Stamp words are written
   * and read with plain accesses (each Atomics op costs ~15 ns here): the arrival's `#publish`
   * publishes them, and a parity's words are rewritten only after every peer has arrived at the
   * next arrival, so they have read them.
   */
  #arriveAll(stamp: number): void {
    const seq = ++this.#arriveSeq;
    const mine = this.#word(this.rank, RANK_WORD.STAMP + (seq & 1) * 2);
    storeStamp(this.#ctrl, mine, stamp);
    const digest = this.#word(this.rank, RANK_WORD.DIGEST + (seq & 1));
    this.#ctrl[digest] = this.#digest;
    this.#publish(this.#word(this.rank, RANK_WORD.ARRIVE_SEQ), seq);
    this.#ringPeers();
    const arrival = this.#arrival;
    arrival.seq = seq;
    arrival.stamp = stamp;
    arrival.next = 0;
    this.#waitUntil(
      this.#allArrived,
      this.#describeArrival,
      this.#firstMissing,
      this.#arrivalStalled,
    );
    if (arrival.gone) throw this.#peerGone(arrival.next, this.#describeArrival());
    for (let r = 0; r < this.size; r++) {
      const stampOfR = loadStamp(this.#ctrl, mine + (r - this.rank) * CTRL.RANK_WORDS);
      if (stampOfR !== stamp) {
        throw this.#calls?.mismatch(r, stamp, stampOfR) ??
          new MismatchError(`Rank ${this.rank} and rank ${r} are in different calls`, {
            failedRank: r,
          });
      }
      if (this.#ctrl[digest + (r - this.rank) * CTRL.RANK_WORDS] !== this.#digest) {
        throw this.#pipelineMismatch(r);
      }
    }
    this.#digest = DIGEST_SEED;
  }

  /** Rank `r` closed its communicator while this rank waits for it in the call with `stamp`. */
  #pipelineMismatch(r: number): MismatchError {
    return new MismatchError(
      `Rank ${this.rank} and rank ${r} made different small bcast/reduce calls since their last ` +
        `synchronizing call (their number, roots, ops, counts or dtypes differ)`,
      { failedRank: r },
    );
  }

  /** The parity of the next arrival, whose exchange words and slots a call may fill. */
  get #nextParity(): number {
    return (this.#arriveSeq + 1) & 1;
  }

  /** What {@linkcode #arriveAll} waits for, in fields so the eager path allocates nothing. */
  #arrival = { seq: 0, stamp: 0, next: 0, gone: false };
  #allArrived = (): boolean => {
    const a = this.#arrival;
    a.gone = false;
    for (; a.next < this.size; a.next++) {
      if (a.next === this.rank) continue;
      const arrived = this.#word(a.next, RANK_WORD.ARRIVE_SEQ);
      if (Atomics.load(this.#ctrl, arrived) - a.seq >= 0) continue;
      // A rank that closed will never arrive: stop waiting, and say so (unless it arrived just
      // before closing: its arrival is visible once its close is).
      if (!this.#closed(a.next)) return false;
      if (Atomics.load(this.#ctrl, arrived) - a.seq >= 0) continue;
      return a.gone = true;
    }
    return true;
  };
  #closed = (r: number): boolean => Atomics.load(this.#ctrl, this.#word(r, RANK_WORD.CLOSED)) !== 0;
  #firstMissing = (): number => this.#arrival.next;
  /**
   * An arrival that stalls: a missing rank that has begun a pipelined call this rank has not made
   * is in another call (pipelined writers never wait for their readers, so only this finds it).
   */
  #arrivalStalled = (): void => {
    const r = this.#arrival.next;
    const current = Atomics.load(this.#ctrl, this.#word(r, RANK_WORD.PIPE_CURRENT));
    const ahead = (current - this.#pipeSeq) | 0;
    if (ahead <= 0) return;
    // Its stamp words hold its latest two pipelined calls: the first ahead is one of them then.
    const parity = this.#word(r, RANK_WORD.PIPE_CURRENT_STAMP + ((this.#pipeSeq + 1) & 1) * 2);
    throw this.#otherCall(
      r,
      this.#arrival.stamp,
      ahead <= 2 ? loadStamp(this.#ctrl, parity) : undefined,
    );
  };
  /**
   * A pipelined read that stalls: a writer that has made an arrival this rank has not is in
   * another call (a collective that is not pipelined).
   */
  #pipeStalled = (): void => {
    const w = this.#pipeWriter;
    const arrived = Atomics.load(this.#ctrl, this.#word(w, RANK_WORD.ARRIVE_SEQ));
    const ahead = (arrived - this.#arriveSeq) | 0;
    if (ahead <= 0) return;
    const parity = this.#word(w, RANK_WORD.STAMP + ((this.#arriveSeq + 1) & 1) * 2);
    throw this.#otherCall(
      w,
      this.#pipeStamp,
      ahead === 1 ? loadStamp(this.#ctrl, parity) : undefined,
    );
  };

  /** Rank `r` is in another call than this rank's (with `stamp`): `theirs`, when known. */
  #otherCall(r: number, stamp: number, theirs?: number): MismatchError {
    if (theirs !== undefined && this.#calls) return this.#calls.mismatch(r, stamp, theirs);
    return new MismatchError(
      `Rank ${this.rank} called ${this.#calls?.describe(stamp) ?? "a collective"} but rank ${r} ` +
        `is in another call: every rank must make the same calls in the same order`,
      { failedRank: r },
    );
  }
  #describeArrival = (): string => this.#calls?.describe(this.#arrival.stamp) ?? "collective";

  exchangeViews(view: TypedArray, stamp: number): (TypedArray | undefined)[] {
    const parity = this.#nextParity;
    const desc = (r: number, i: number) => this.#word(r, RANK_WORD.VIEW_DESC + parity * 3 + i);
    const inHeap = memoryOf(view.buffer) === this.#heaps[this.rank];
    this.#ctrl[desc(this.rank, 0)] = inHeap ? view.byteOffset : 0;
    this.#ctrl[desc(this.rank, 1)] = view.length;
    this.#ctrl[desc(this.rank, 2)] = DTYPES.indexOf(dtypeOf(view));
    this.#arriveAll(stamp);
    return this.#peerViews(view, (r) => ({
      offset: this.#ctrl[desc(r, 0)] >>> 0,
      count: this.#ctrl[desc(r, 1)],
      dtype: this.#ctrl[desc(r, 2)],
    }));
  }

  eagerExchange(view: TypedArray, stamp: number): TypedArray[] {
    if (view.byteLength > EAGER_BYTES) {
      throw new RangeError(
        `Eager exchange holds at most ${EAGER_BYTES} bytes, got ${view.byteLength}`,
      );
    }
    // Equal stamps mean equal counts and dtypes, so every rank's slot holds this view's shape.
    const slots = this.#eagerSlots(this.#nextParity, dtypeOf(view), view.length);
    copy(slots[this.rank], view);
    this.#arriveAll(stamp);
    return slots;
  }

  /**
   * Every rank's eager slot of `parity` viewed as `count` × `dtype`; kept while calls repeat the
   * shape, so a small collective creates no views.
   */
  #eagerSlots(parity: number, dtype: Dtype, count: number): TypedArray[] {
    const cached = this.#eagerViews[parity];
    if (cached?.[0].length === count && dtypeOf(cached[0]) === dtype) return cached;
    const inline = count * DTYPE_INFO[dtype].bytes <= EAGER_INLINE_BYTES;
    return this.#eagerViews[parity] = this.#heaps.map((heap, r) =>
      inline
        ? makeView(
          dtype,
          this.#control,
          this.#word(r, RANK_WORD.EAGER_INLINE) * 4 + parity * EAGER_INLINE_BYTES,
          count,
        )
        : makeView(dtype, heapBuffer(heap), this.#eagerArea(r) + parity * EAGER_BYTES, count)
    );
  }

  abort(error: CommError): void {
    if (this.#aborted) return;
    this.#aborted = error;
    const { failedRank, reason } = failureNotice(error, this.rank);
    raiseAbort(this.#control, this.size, failedRank, reason, this.rank);
  }

  /**
   * Says goodbye (goodbyes.ts): publishes this rank's calls, waits (up to the timeout) until every
   * peer has closed, draining what they send meanwhile, and judges their goodbyes. Throws what
   * that finds, or the failure that aborted the group.
   */
  close(): void {
    this.#sends.forEach((q) => q.length = 0);
    this.#recvs.forEach((q) => q.length = 0);
    this.#checkAbort();
    const summary = this.#calls?.summary();
    const mine = (word: number) => this.#word(this.rank, word);
    this.#ctrl[mine(RANK_WORD.CLOSED_CALLS)] = summary ? summary.calls + 1 : 0;
    this.#ctrl[mine(RANK_WORD.CLOSED_DIGEST)] = summary?.digest ?? 0;
    storeStamp(this.#ctrl, mine(RANK_WORD.CLOSED_LAST), summary?.last ?? 0);
    Atomics.store(this.#ctrl, mine(RANK_WORD.CLOSED), 1);
    this.#ringPeers();
    try {
      this.#waitUntil(
        this.#allClosed,
        "the other ranks to close their communicators",
        this.#firstOpen,
      );
    } catch (e) {
      if (!(e instanceof CommTimeoutError)) throw e; // a peer still running judges its own goodbye
    }
    let problem: CommError | undefined;
    for (let r = 0; r < this.size && !problem; r++) {
      if (r !== this.rank && this.#closed(r)) {
        problem = this.#goodbyes.heard(r, this.#goodbyeOf(r), this.#sent[r]);
      }
    }
    problem ??= this.#goodbyes.closing(this.#unclaimed(), this.#sent);
    if (problem) {
      this.abort(problem);
      throw problem;
    }
  }

  #allClosed = (): boolean => {
    for (let r = 0; r < this.size; r++) if (r !== this.rank && !this.#closed(r)) return false;
    return true;
  };
  #firstOpen = (): number => {
    for (let r = 0; r < this.size; r++) if (r !== this.rank && !this.#closed(r)) return r;
    return this.rank;
  };

  /** A message some peer sent that no receive took: still in a ring, or drained aside. */
  #unclaimed(): Unclaimed | undefined {
    for (let p = 0; p < this.size; p++) {
      const u = this.#unexpected[p].find((u) => !u.waiter);
      if (u) return { peer: p, tag: u.tag, stamp: u.stamp };
      const ring = this.#inbound[p];
      if (!ring || Atomics.load(ring.words, RING_HEAD) === Atomics.load(ring.words, RING_TAIL)) {
        continue;
      }
      const h = RING_SLOT_HEADERS +
        (Atomics.load(ring.words, RING_TAIL) & (SLOTS - 1)) * SLOT_HEADER_WORDS;
      return { peer: p, tag: ring.words[h], stamp: loadStamp(ring.words, h + 4) };
    }
    return undefined;
  }

  pipeBegin(stamp: number): void {
    this.#pipeSeq = (this.#pipeSeq + 1) | 0;
    this.#pipeStamp = stamp;
    const words = this.#word(this.rank, RANK_WORD.PIPE_CURRENT_STAMP + (this.#pipeSeq & 1) * 2);
    storeStamp(this.#ctrl, words, stamp);
    // FNV over the two words just written.
    const digest = Math.imul(this.#digest ^ this.#ctrl[words], DIGEST_PRIME);
    this.#digest = Math.imul(digest ^ this.#ctrl[words + 1], DIGEST_PRIME);
    this.#publish(this.#word(this.rank, RANK_WORD.PIPE_CURRENT), this.#pipeSeq);
  }

  pipeWrite(view: TypedArray, reader?: number): void {
    // The slot last held call seq − PIPE_SLOTS (or earlier): every rank must be done with it.
    // Peers' progress is cached, so a writer that is not about to lap them reads no shared line.
    if (((this.#pipeSeq - PIPE_SLOTS - this.#pipeAllDone) | 0) > 0) {
      if (!this.#slotFree()) this.#waitUntil(this.#slotFree, this.#describePipe, reader);
    }
    copy(this.#pipeView(this.rank, view), view);
    const ctrl = this.#ctrl;
    const h = this.#pipeHeader(this.rank);
    storeStamp(ctrl, h + PIPE_WORD.STAMP, this.#pipeStamp);
    this.#publish(h + PIPE_WORD.SEQ, this.#pipeSeq);
    this.#pipeFinished();
    if (reader !== undefined) this.#ring(reader);
    else this.#ringPeers();
  }

  pipeRead(writer: number, like: TypedArray): TypedArray {
    const h = this.#pipeSlot = this.#pipeHeader(writer);
    this.#pipeWriter = writer;
    if (!this.#slotWritten()) {
      this.#waitUntil(this.#slotReadable, this.#describePipe, writer, this.#pipeStalled);
    }
    // A plain read: the atomic load of the wait above already ordered it.
    if (this.#ctrl[h + PIPE_WORD.SEQ] !== this.#pipeSeq) throw this.#writerElsewhere(writer);
    const theirs = loadStamp(this.#ctrl, h + PIPE_WORD.STAMP);
    if (theirs !== this.#pipeStamp) {
      throw this.#calls?.mismatch(writer, this.#pipeStamp, theirs) ??
        this.#pipelineMismatch(writer);
    }
    return this.#pipeView(writer, like);
  }

  /**
   * The stamp of the pipelined call `writer` is in, if it is this rank's call (read like a
   * seqlock: a parity's words are rewritten only after the writer has moved on twice).
   */
  #writerStamp(writer: number): number | undefined {
    const current = this.#word(writer, RANK_WORD.PIPE_CURRENT);
    if (Atomics.load(this.#ctrl, current) !== this.#pipeSeq) return undefined;
    const words = this.#word(writer, RANK_WORD.PIPE_CURRENT_STAMP + (this.#pipeSeq & 1) * 2);
    const stamp = loadStamp(this.#ctrl, words);
    return Atomics.load(this.#ctrl, current) === this.#pipeSeq ? stamp : undefined;
  }

  /** Why `writer`'s slot does not hold this rank's pipelined call. */
  #writerElsewhere(writer: number): MismatchError {
    const theirs = this.#writerStamp(writer);
    if (theirs !== undefined && this.#calls) {
      return this.#calls.mismatch(writer, this.#pipeStamp, theirs);
    }
    if (this.#closed(writer)) return this.#peerGone(writer, this.#describePipe());
    return this.#pipelineMismatch(writer);
  }

  pipeEnd(): void {
    if (this.#pipeFinished()) this.#ringPeers();
  }

  /**
   * Publishes that this rank is done with the current pipelined call, every
   * {@linkcode PIPE_DONE_EVERY} calls (each publication costs a fence, or a cache line a writer
   * must fetch; a writer waits for calls PIPE_SLOTS behind its own, which every rank publishes
   * before it can wait on that writer).
   */
  #pipeFinished(): boolean {
    if ((this.#pipeSeq & (PIPE_DONE_EVERY - 1)) !== 0) return false;
    this.#publish(this.#word(this.rank, RANK_WORD.PIPE_DONE), this.#pipeSeq);
    return true;
  }

  /** Byte offset in `rank`'s heap of its eager area: two eager slots, then the pipeline slots. */
  #eagerArea(rank: number): number {
    return Atomics.load(this.#ctrl, this.#word(rank, RANK_WORD.EAGER_OFFSET)) >>> 0;
  }

  /** Int32 index of `rank`'s pipeline slot header for the current pipelined call. */
  #pipeHeader(rank: number): number {
    const slot = this.#pipeSeq & (PIPE_SLOTS - 1);
    return this.#word(rank, RANK_WORD.PIPE + slot * PIPE_WORD.WORDS);
  }

  /**
   * `rank`'s pipeline slot of the current call viewed like `like`: inside the slot's header line
   * when it fits there (one line crosses cores per call, and reading consecutive calls walks
   * consecutive lines), else in the rank's heap.
   */
  #pipeView(rank: number, like: TypedArray): TypedArray {
    const slot = this.#pipeSeq & (PIPE_SLOTS - 1);
    const i = rank * PIPE_SLOTS + slot;
    const cached = this.#pipeViews[i];
    if (cached?.length === like.length && cached.constructor === like.constructor) return cached;
    const [buffer, offset] = like.byteLength <= PIPE_WORD.INLINE_BYTES
      ? [this.#control, (this.#pipeHeader(rank) + PIPE_WORD.INLINE) * 4]
      : [
        heapBuffer(this.#heaps[rank]),
        this.#eagerArea(rank) + 2 * EAGER_BYTES + slot * PIPE_BYTES,
      ];
    return this.#pipeViews[i] = makeView(dtypeOf(like), buffer, offset, like.length);
  }

  /** The slot header a pipeline read waits for, in a field so waits allocate nothing. */
  #pipeSlot = 0;
  /** The last pipelined call every rank is known to have finished. */
  #pipeAllDone = 0;
  #slotFree = (): boolean => {
    let least = this.#pipeSeq;
    for (let r = 0; r < this.size; r++) {
      if (r === this.rank) continue;
      const done = Atomics.load(this.#ctrl, this.#word(r, RANK_WORD.PIPE_DONE));
      if (((done - least) | 0) < 0) least = done;
    }
    this.#pipeAllDone = least;
    return ((this.#pipeSeq - PIPE_SLOTS - least) | 0) <= 0;
  };
  #pipeWriter = 0;
  #slotWritten = (): boolean =>
    ((Atomics.load(this.#ctrl, this.#pipeSlot + PIPE_WORD.SEQ) - this.#pipeSeq) | 0) >= 0;
  /**
   * The slot is written, or will never be: its writer is in this call with another stamp, has
   * gone past it, or has closed (checks read the writer's line only while waiting).
   */
  #slotReadable = (): boolean => {
    if (this.#slotWritten()) return true;
    const w = this.#pipeWriter;
    const current = Atomics.load(this.#ctrl, this.#word(w, RANK_WORD.PIPE_CURRENT));
    if (((current - this.#pipeSeq) | 0) > 0 || this.#closed(w)) return true;
    const theirs = this.#writerStamp(w);
    return theirs !== undefined && theirs !== this.#pipeStamp;
  };
  #describePipe = (): string => this.#calls?.describe(this.#pipeStamp) ?? "pipelined call";

  #peerViews(
    mine: TypedArray,
    read: (r: number) => { offset: number; count: number; dtype: number },
  ): (TypedArray | undefined)[] {
    const dtype = dtypeOf(mine);
    return this.#heaps.map((heap, r) => {
      const d = read(r);
      if (d.count !== mine.length || DTYPES[d.dtype] !== dtype) {
        throw new MismatchError(
          `Rank ${this.rank} exchanged ${mine.length} × ${dtype} but rank ${r} exchanged ` +
            `${d.count} × ${DTYPES[d.dtype]}; every rank must pass the same count and dtype`,
          { failedRank: r },
        );
      }
      // Offset 0 never names a heap buffer: that rank published a view outside its heap.
      return d.offset === 0 ? undefined : makeView(dtype, heapBuffer(heap), d.offset, d.count);
    });
  }

  #word(rank: number, word: number): number {
    return CTRL.RANK_BASE + rank * CTRL.RANK_WORDS + word;
  }

  /**
   * Stores `value` at control word `index` for peers polling it: a plain store where the heavy
   * fence makes that safe (heavy_fence.ts), else an atomic one.
   */
  #publish(index: number, value: number): void {
    if (this.#heavyFence) this.#ctrl[index] = value;
    else Atomics.store(this.#ctrl, index, value);
  }

  /**
   * Wakes `peer` if it sleeps. Callers publish their change first; a sleeper sets SLEEPING, runs
   * the heavy fence where there is one, reads its doorbell, re-checks, then waits on the doorbell
   * value — so either it sees the change or this sees SLEEPING (Dekker; with plain publications
   * the sleeper's heavy fence stands in for the fence this side leaves out). Spinning peers cost
   * one load.
   */
  #ring(peer: number): void {
    if (Atomics.load(this.#ctrl, this.#word(peer, RANK_WORD.SLEEPING)) === 0) return;
    const bell = this.#word(peer, RANK_WORD.DOORBELL);
    Atomics.add(this.#ctrl, bell, 1);
    Atomics.notify(this.#ctrl, bell);
  }

  /** {@linkcode #ring}s every other rank. */
  #ringPeers(): void {
    for (let p = 0; p < this.size; p++) if (p !== this.rank) this.#ring(p);
  }

  /** Queues a probe of `peer` with this rank's stamp for its call with `tag`. */
  #probe(peer: number, tag: number): void {
    const stamp = this.#calls?.stampOf(tag);
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

  /**
   * Spins, then sleeps, advancing all traffic, until `done()`; throws on abort or after the
   * timeout without progress (traffic moving, or `peer`, the one waited for, changing as ranks
   * arrive one by one: a large group starts over many seconds). `stalled` runs once the wait has
   * slept {@linkcode STALL_PROBE_MS} without progress.
   */
  #waitUntil(
    done: () => boolean,
    describe: string | (() => string),
    peer?: number | (() => number),
    stalled?: () => void,
  ): void {
    let polls = 0;
    let spinSince = -1;
    let idleSince = -1;
    let waitingFor = -1;
    // Only ranks that outnumber cores have a yielder (and no spin): they hand their core to a peer
    // from the first poll (spinning even 64 polls holds the awaited rank's core for ~10 µs) and
    // for YIELD_MS, paying no wake-up, before they sleep.
    const canYield = this.#yieldCore !== undefined;
    let yielding = canYield;
    while (!done()) {
      if (this.#progress()) {
        polls = 0;
        spinSince = idleSince = -1;
        yielding = canYield;
        continue;
      }
      this.#checkAbort();
      if (yielding) this.#yieldCore!();
      if (++polls % POLLS_PER_CLOCK !== 0) continue;
      const spun = performance.now();
      if (spinSince < 0) spinSince = spun;
      if (spun - spinSince < this.#spinMs) continue;
      yielding = canYield && spun - spinSince < YIELD_MS;
      if (yielding) continue;
      const sleeping = this.#word(this.rank, RANK_WORD.SLEEPING);
      const bell = this.#word(this.rank, RANK_WORD.DOORBELL);
      Atomics.store(this.#ctrl, sleeping, 1);
      this.#heavyFence?.(); // peers' plain publications so far are visible to the checks below
      const seen = Atomics.load(this.#ctrl, bell);
      if (!this.#progress() && !done()) Atomics.wait(this.#ctrl, bell, seen, SLEEP_SLICE_MS);
      Atomics.store(this.#ctrl, sleeping, 0);
      const now = performance.now();
      const who = typeof peer === "function" ? peer() : peer;
      if (idleSince < 0 || (who ?? -1) !== waitingFor) {
        idleSince = now;
        waitingFor = who ?? -1;
      } else if (stalled && now - idleSince > STALL_PROBE_MS) {
        stalled();
        stalled = undefined;
      } else if (now - idleSince > this.#timeoutMs) {
        throw new CommTimeoutError(
          `Rank ${this.rank} timed out after ${this.#timeoutMs} ms waiting for ` +
            `${who === undefined ? "all ranks" : `rank ${who}`}: ` +
            (typeof describe === "string" ? describe : describe()),
          { failedRank: who },
        );
      }
    }
    // An operation that completed stands; a failure not yet seen here fails the next wait.
    if (this.#aborted) throw this.#aborted;
  }

  #checkAbort(): void {
    if (this.#aborted) throw this.#aborted;
    if (Atomics.load(this.#ctrl, CTRL.ABORT) !== 0) {
      const { failedRank, reason, by } = readAbort(this.#control)!;
      this.#aborted = noticeError(this.rank, by, failedRank, reason);
      throw this.#aborted;
    }
  }

  /** One pass over every peer's rings. Returns whether anything moved. */
  #progress(): boolean {
    let moved = false;
    for (let p = 0; p < this.size; p++) {
      if (p === this.rank) continue;
      if (this.#sends[p].length > 0 && this.#pushSends(p)) moved = true;
      if (this.#pullRecvs(p)) moved = true;
    }
    return moved;
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
      const chunk = Math.min(this.#slotBytes, req.data.byteLength - req.offset);
      if (chunk > 0) ring.slots[slot].set(req.data.subarray(req.offset, req.offset + chunk));
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
    if (moved) this.#ring(peer);
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
        const problem = this.#calls?.arrived(
          peer,
          words[h],
          loadStamp(words, h + 4),
        );
        if (problem) this.abort(problem);
        tail = (tail + 1) | 0;
        Atomics.store(words, RING_TAIL, tail);
        continue;
      }
      let cur = this.#incoming[peer];
      if (!cur) {
        const stamp = loadStamp(words, h + 4);
        cur = this.#incoming[peer] = this.#startIncoming(peer, words[h], words[h + 1], stamp);
      }
      if (chunk > 0) cur.target.set(ring.slots[slot].subarray(0, chunk), cur.offset);
      cur.offset += chunk;
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
    this.#ring(peer);
    return true;
  }

  #startIncoming(peer: number, tag: number, total: number, stamp: number): Incoming {
    const problem = this.#calls?.arrived(peer, tag, stamp);
    if (problem) this.abort(problem); // drained all the same; the next wait throws
    const posted = this.#recvs[peer];
    const i = posted.findIndex((r) => r.tag === tag);
    if (i >= 0) {
      const request = posted.splice(i, 1)[0];
      request.stamp = stamp;
      if (request.into.byteLength === total) {
        return { tag, target: request.into, offset: 0, request };
      }
      // Drain the message anyway so the ring stays usable, then fail the receive.
      request.error = new MismatchError(
        `Rank ${this.rank} expected ${request.into.byteLength} bytes from rank ${peer} (tag ${tag}) ` +
          `but rank ${peer} sent ${total}: counts or dtypes differ between ranks`,
        { failedRank: peer },
      );
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
    else {
      req.error = new MismatchError(
        `Rank ${this.rank} expected ${req.into.byteLength} bytes from rank ${peer} (tag ${u.tag}) ` +
          `but rank ${peer} sent ${u.data.byteLength}: counts or dtypes differ between ranks`,
        { failedRank: peer },
      );
    }
    req.done = true;
    this.#completions++;
    Atomics.add(this.#inbound[peer]!.words, RING_TAKEN, 1);
  }
}

/** The `shm` transport: workers that share memory (see `TransportFacts`). */
export const SHM: WorkersTransport & { name: "shm" } = {
  name: "shm",
  summary: "workers sharing memory: rings of slots, and direct reads of each other's heaps",
  launch: "workers",
  memory: ["host", "shared", "gpu", "managed"],
  bestMemory: "shared",
  offers: ["messages", "shared", "staging"],
  needsDevice: false,
  blocking: true,
  rankBytes: 16 * 2 ** 20,
  groupBytes: shmSetupBytes,
  // Direct reads of peers' heaps move each byte across memory once: they win at every size.
  prefers: (_collective, _bytes, _size, side) => side === "host" ? "shm_direct" : undefined,
  prepare(size) {
    const setup = createShmSetup(size);
    return {
      forRank: () => ({ handed: setup, transfer: [] }),
      abort: (failedRank, reason) => raiseAbort(setup.control, size, failedRank, reason),
    };
  },
  join(rank, handed, heaps, heap, timeoutMs) {
    const eager = heap.alloc("f64", ShmTransport.EAGER_AREA_BYTES / 8);
    const setup = { ...(handed as ShmSetup), heaps, eagerOffset: eager.byteOffset };
    return new ShmTransport(rank, setup, { timeoutMs });
  },
};
