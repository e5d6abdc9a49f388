/**
 * The `shm` transport's arrivals: barriers, and the exchanges of views and of small (eager) data
 * that direct algorithms make. Each arrival publishes the call's stamp and the digest of the
 * pipelined calls since the previous one; every rank checks every other's.
 * @module
 */

import { MismatchError } from "../errors.ts";
import { heapBuffer, memoryOf } from "../memory/heap.ts";
import { type Dtype, DTYPE_INFO, dtypeOf, DTYPES, makeView, type TypedArray } from "../types.ts";
import { copy } from "../../kernels/copy.ts";
import { DIGEST_SEED, type ShmControl } from "./shm_control.ts";
import { CTRL, EAGER_INLINE_BYTES, loadStamp, RANK_WORD, storeStamp } from "./shm_layout.ts";

/** Payload bytes of one eager slot (small allreduce and friends). */
export const EAGER_BYTES = 16 * 1024;

/** Set in a view descriptor's dtype word: the view came in its rank's eager slot. */
const IN_SLOT = 0x100;

/**
 * Bytes at the start of an eager slot that head an exchange beside a layout: the view's
 * descriptor, then the arrival's number, stamp and digest ({@linkcode HEAD}). Peers wait on the
 * head, so the line that tells them the rank arrived holds what they read next: for two ranks'
 * small alltoallv, all of it.
 */
const SLOT_HEAD_BYTES = 32;
/** Int32 words of a slot head. */
const HEAD = { VIEW: 0, SEQ: 3, STAMP: 4, DIGEST: 6, WORDS: 8 } as const;

/**
 * Every rank's views of one shape, kept while calls repeat it, with the shape as plain values
 * (cheaper to compare than a view's own length and dtype).
 */
interface Shaped {
  views: TypedArray[];
  dtype: Dtype;
  count: number;
}

/** One rank's arrivals. */
export class ShmArrivals {
  readonly #control: ShmControl;
  readonly #ctrl: Int32Array;
  readonly #rank: number;
  readonly #size: number;
  /** Every rank's eager slot of each parity, kept while calls repeat the shape. */
  #eagerViews: (Shaped | undefined)[] = [];
  /** Every rank's last view each parity's exchange returned, with where it lies. */
  #peerViews: ({ view: TypedArray; dtype: Dtype; count: number; offset: number } | undefined)[][] =
    [[], []];
  /** Every rank's slot head of each parity (see {@linkcode exchangeViewsBeside}). */
  #heads: Int32Array[][] = [];
  /** Every rank's `beside` of each parity, kept while calls repeat the shape. */
  #besideViews: (Shaped | undefined)[] = [];
  /** What each parity's exchange beside returned, refilled by the next of that parity. */
  #besideExchanges: {
    views: (TypedArray | undefined)[];
    besides: TypedArray[];
    inSlot: boolean;
  }[] = [];

  constructor(control: ShmControl) {
    this.#control = control;
    this.#ctrl = control.words;
    this.#rank = control.rank;
    this.#size = control.size;
  }

  /**
   * One arrival: publishes `stamp` and this rank's next arrival number, waits until every rank
   * has arrived as far, and checks that all arrived with the same stamp and the same pipelined
   * calls before. Stamp words are written and read with plain accesses (each Atomics op costs
   * ~15 ns): the arrival's publication publishes them, and a parity's words are rewritten only
   * after every peer has arrived at the next arrival, so they have read them. With `heads`
   * (every rank's slot head of this arrival's parity), the number, stamp and digest go there too,
   * and peers wait on the head; a peer that arrived in another kind of call shows in its arrival
   * line, which is written either way.
   */
  barrier(stamp: number, heads?: Int32Array[]): void {
    const control = this.#control;
    const ctrl = this.#ctrl;
    const seq = ++control.arriveSeq;
    const mine = control.word(this.#rank, RANK_WORD.STAMP + (seq & 1) * 2);
    storeStamp(ctrl, mine, stamp);
    const digest = control.word(this.#rank, RANK_WORD.DIGEST + (seq & 1));
    ctrl[digest] = control.pipeDigest;
    if (heads) {
      const head = heads[this.#rank];
      storeStamp(head, HEAD.STAMP, stamp);
      head[HEAD.DIGEST] = control.pipeDigest;
      control.publish(HEAD.SEQ, seq, head);
    }
    control.publish(control.word(this.#rank, RANK_WORD.ARRIVE_SEQ), seq);
    control.ringPeers();
    const arrival = this.#arrival;
    arrival.seq = seq;
    arrival.stamp = stamp;
    arrival.next = 0;
    arrival.heads = heads;
    control.waitUntil(this.#allArrived, this.#describe, this.#firstMissing, this.#stalled);
    if (arrival.gone) throw control.peerGone(arrival.next, this.#describe());
    for (let r = 0; r < this.#size; r++) {
      // A peer that arrived through its slot head has its stamp and digest there too.
      const head = heads?.[r];
      const inHead = head !== undefined && head[HEAD.SEQ] === seq;
      const stampOfR = inHead
        ? loadStamp(head, HEAD.STAMP)
        : loadStamp(ctrl, mine + (r - this.#rank) * CTRL.RANK_WORDS);
      const digestOfR = inHead
        ? head[HEAD.DIGEST]
        : ctrl[digest + (r - this.#rank) * CTRL.RANK_WORDS];
      if (stampOfR !== stamp) {
        throw control.calls?.mismatch(r, stamp, stampOfR) ??
          new MismatchError(
            `Rank ${control.ids[this.#rank]} and rank ${control.ids[r]} are in different calls`,
            { failedRank: control.ids[r] },
          );
      }
      if (digestOfR !== control.pipeDigest) {
        throw control.pipelineMismatch(r);
      }
    }
    control.pipeDigest = DIGEST_SEED;
  }

  /** See `SharedAccess.exchangeViews`. */
  exchangeViews(view: TypedArray, stamp: number, anyLength = false): (TypedArray | undefined)[] {
    const ctrl = this.#ctrl;
    const parity = this.#nextParity;
    const mine = this.#control.word(this.#rank, RANK_WORD.VIEW_DESC + parity * 3);
    const dtype = dtypeOf(view);
    this.#publishView(ctrl, mine, view, dtype, -1);
    this.barrier(stamp);
    const views = new Array<TypedArray | undefined>(this.#size);
    for (let r = 0; r < this.#size; r++) {
      const desc = mine + (r - this.#rank) * CTRL.RANK_WORDS;
      views[r] = this.#viewOf(parity, r, ctrl, desc, view, dtype, anyLength);
    }
    return views;
  }

  /** See `SharedAccess.exchangeViewsBeside`. */
  exchangeViewsBeside(
    view: TypedArray,
    beside: TypedArray,
    stamp: number,
    anyLength = false,
    inSlot = false,
  ): { views: (TypedArray | undefined)[]; besides: TypedArray[]; inSlot: boolean } {
    if (SLOT_HEAD_BYTES + beside.byteLength > EAGER_BYTES) {
      // Past the eager slot (a group of thousands), `beside` takes an arrival of its own.
      const besides = this.exchangeViews(beside, stamp, false);
      if (besides.some((b) => b === undefined)) {
        throw new RangeError(
          `A view beside another past ${EAGER_BYTES} bytes must lie in the heap`,
        );
      }
      return {
        views: this.exchangeViews(view, stamp, anyLength),
        besides: besides as TypedArray[],
        inSlot: false,
      };
    }
    // Equal stamps mean equal shapes of `beside`, as eagerExchange's. The view's descriptor
    // heads the slot, so a peer reads it, `beside` and a view carried in the slot from one
    // stretch of memory (a line, for two ranks' small alltoallv).
    const parity = this.#nextParity;
    const heads = this.#slotHeads(parity);
    const besides = this.#besideSlots(parity, dtypeOf(beside), beside.length);
    copy(besides[this.#rank], beside);
    const dtype = dtypeOf(view);
    const at = inSlot && this.fitsSlot(view, beside) ? this.#slotDataAt(beside) : -1;
    if (at >= 0) {
      const area = this.#control.eagerArea(this.#rank) + parity * EAGER_BYTES;
      copy(this.#peerView(parity, this.#rank, dtype, area + at, view.length), view);
    }
    this.#publishView(heads[this.#rank], HEAD.VIEW, view, dtype, at);
    this.barrier(stamp, heads);
    // Valid as the slots are (until the next-but-one arrival): a small call allocates nothing.
    const exchanged = this.#besideExchanges[parity] ??= { views: [], besides, inSlot: true };
    exchanged.besides = besides;
    exchanged.inSlot = true;
    for (let r = 0; r < this.#size; r++) {
      exchanged.views[r] = this.#viewOf(parity, r, heads[r], HEAD.VIEW, view, dtype, anyLength);
      if (!(heads[r][HEAD.VIEW + 2] & IN_SLOT)) exchanged.inSlot = false;
    }
    return exchanged;
  }

  /** See `SharedAccess.fitsSlot`. */
  fitsSlot(view: TypedArray, beside: TypedArray): boolean {
    return SLOT_HEAD_BYTES + beside.byteLength <= EAGER_BYTES &&
      this.#slotDataAt(beside) + view.byteLength <= EAGER_BYTES;
  }

  /** Where a view carried in an eager slot begins: past the head and `beside`. */
  #slotDataAt(beside: TypedArray): number {
    return SLOT_HEAD_BYTES + Math.ceil(beside.byteLength / 8) * 8;
  }

  /**
   * Writes the descriptor of `view` (of `dtype`) at `words[at]`: where it lies (`slotAt` ≥ 0: at that byte of this
   * rank's eager slot; else its offset in this rank's heap, or 0 outside it), its length and
   * its dtype.
   */
  #publishView(
    words: Int32Array,
    at: number,
    view: TypedArray,
    dtype: Dtype,
    slotAt: number,
  ): void {
    words[at] = slotAt >= 0
      ? slotAt
      : memoryOf(view.buffer) === this.#control.heaps[this.#rank]
      ? view.byteOffset
      : 0;
    words[at + 1] = view.length;
    words[at + 2] = DTYPES.indexOf(dtype) | (slotAt >= 0 ? IN_SLOT : 0);
  }

  /**
   * Rank `r`'s view from its descriptor at `words[at]`, checked against this rank's `view` of
   * `dtype` (and its length unless `anyLength`): undefined where it published a view outside its
   * heap.
   */
  #viewOf(
    parity: number,
    r: number,
    words: Int32Array,
    at: number,
    view: TypedArray,
    dtype: Dtype,
    anyLength: boolean,
  ): TypedArray | undefined {
    const offset = words[at] >>> 0, count = words[at + 1], word = words[at + 2];
    if ((!anyLength && count !== view.length) || DTYPES[word & ~IN_SLOT] !== dtype) {
      const ids = this.#control.ids;
      throw new MismatchError(
        `Rank ${ids[this.#rank]} exchanged ${view.length} × ${dtype} but rank ${ids[r]} ` +
          `exchanged ${count} × ${DTYPES[word & ~IN_SLOT]}; every rank must pass the same ` +
          `count and dtype`,
        { failedRank: ids[r] },
      );
    }
    const from = word & IN_SLOT
      ? this.#control.eagerArea(r) + parity * EAGER_BYTES + offset
      : offset;
    // Offset 0 never names a heap buffer: that rank published a view outside its heap.
    return from === 0 ? undefined : this.#peerView(parity, r, dtype, from, count);
  }

  /**
   * Rank `r`'s view at `offset` of its heap, reused while calls repeat it (a view, or the heap's
   * buffer, costs ~100 ns). A heap that grew keeps its bytes where they were, so a view of its
   * earlier buffer still shows them.
   */
  #peerView(parity: number, r: number, dtype: Dtype, offset: number, count: number): TypedArray {
    const cached = this.#peerViews[parity][r];
    if (cached?.offset === offset && cached.count === count && cached.dtype === dtype) {
      return cached.view;
    }
    const view = makeView(dtype, heapBuffer(this.#control.heaps[r]), offset, count);
    this.#peerViews[parity][r] = { view, dtype, count, offset };
    return view;
  }

  /** See `SharedAccess.eagerExchange`. */
  eagerExchange(view: TypedArray, stamp: number): TypedArray[] {
    if (view.byteLength > EAGER_BYTES) {
      throw new RangeError(
        `Eager exchange holds at most ${EAGER_BYTES} bytes, got ${view.byteLength}`,
      );
    }
    // Equal stamps mean equal counts and dtypes, so every rank's slot holds this view's shape.
    const slots = this.#eagerSlots(this.#nextParity, dtypeOf(view), view.length);
    copy(slots[this.#rank], view);
    this.barrier(stamp);
    return slots;
  }

  /** The parity of the next arrival, whose exchange words and slots a call may fill. */
  get #nextParity(): number {
    return (this.#control.arriveSeq + 1) & 1;
  }

  /**
   * Every rank's eager slot of `parity` viewed as `count` × `dtype`; kept while calls repeat the
   * shape, so a small collective creates no views.
   */
  #eagerSlots(parity: number, dtype: Dtype, count: number): TypedArray[] {
    const cached = this.#eagerViews[parity];
    if (cached?.count === count && cached.dtype === dtype) return cached.views;
    const control = this.#control;
    const inline = count * DTYPE_INFO[dtype].bytes <= EAGER_INLINE_BYTES;
    const views = control.heaps.map((_, r) =>
      inline
        ? makeView(
          dtype,
          control.buffer,
          control.word(r, RANK_WORD.EAGER_INLINE) * 4 + parity * EAGER_INLINE_BYTES,
          count,
        )
        : this.#slotView(parity, r, dtype, 0, count)
    );
    this.#eagerViews[parity] = { views, dtype, count };
    return views;
  }

  /** Every rank's `beside` of `parity` as `count` × `dtype`, past its slot's head. */
  #besideSlots(parity: number, dtype: Dtype, count: number): TypedArray[] {
    const cached = this.#besideViews[parity];
    if (cached?.count === count && cached.dtype === dtype) return cached.views;
    const views = this.#control.heaps.map((_, r) =>
      this.#slotView(parity, r, dtype, SLOT_HEAD_BYTES, count)
    );
    this.#besideViews[parity] = { views, dtype, count };
    return views;
  }

  /** Every rank's slot head of `parity` (see {@linkcode SLOT_HEAD_BYTES}). */
  #slotHeads(parity: number): Int32Array[] {
    return this.#heads[parity] ??= this.#control.heaps.map((_, r) =>
      this.#slotView(parity, r, "i32", 0, HEAD.WORDS) as Int32Array
    );
  }

  /** Rank `r`'s eager slot of `parity` from byte `at`, as `count` × `dtype`. */
  #slotView(parity: number, r: number, dtype: Dtype, at: number, count: number): TypedArray {
    const area = this.#control.eagerArea(r) + parity * EAGER_BYTES;
    return makeView(dtype, heapBuffer(this.#control.heaps[r]), area + at, count);
  }

  /** What {@linkcode ShmArrivals.barrier} waits for, in fields so the eager path allocates nothing. */
  #arrival = {
    seq: 0,
    stamp: 0,
    next: 0,
    gone: false,
    heads: undefined as Int32Array[] | undefined,
  };
  #allArrived = (): boolean => {
    const a = this.#arrival;
    const control = this.#control;
    a.gone = false;
    for (; a.next < this.#size; a.next++) {
      if (a.next === this.#rank) continue;
      if (a.heads && Atomics.load(a.heads[a.next], HEAD.SEQ) - a.seq >= 0) continue;
      const arrived = control.word(a.next, RANK_WORD.ARRIVE_SEQ);
      if (Atomics.load(this.#ctrl, arrived) - a.seq >= 0) continue;
      // A rank that closed will never arrive: stop waiting, and say so (unless it arrived just
      // before closing: its arrival is visible once its close is).
      if (!control.closed(a.next)) return false;
      if (Atomics.load(this.#ctrl, arrived) - a.seq >= 0) continue;
      return a.gone = true;
    }
    return true;
  };
  #firstMissing = (): number => this.#arrival.next;
  /**
   * An arrival that stalls: a missing rank that has begun a pipelined call this rank has not made,
   * without arriving, is in another call (pipelined writers never wait for their readers, so only
   * this finds it).
   */
  #stalled = (): void => {
    const control = this.#control;
    const r = this.#arrival.next;
    const current = Atomics.load(this.#ctrl, control.word(r, RANK_WORD.PIPE_CURRENT));
    const ahead = (current - control.pipeSeq) | 0;
    // Looked at again after its pipelined calls: one that arrived and then went on to them (a
    // busy machine kept this rank from seeing the arrival) published the arrival first.
    if (ahead <= 0 || this.#allArrived()) return;
    // Its stamp words hold its latest two pipelined calls: the first ahead is one of them then.
    const parity = control.word(r, RANK_WORD.PIPE_CURRENT_STAMP + ((control.pipeSeq + 1) & 1) * 2);
    throw control.otherCall(
      r,
      this.#arrival.stamp,
      ahead <= 2 ? loadStamp(this.#ctrl, parity) : undefined,
    );
  };
  #describe = (): string => this.#control.calls?.describe(this.#arrival.stamp) ?? "collective";
}
