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

/** One rank's arrivals. */
export class ShmArrivals {
  readonly #control: ShmControl;
  readonly #ctrl: Int32Array;
  readonly #rank: number;
  readonly #size: number;
  /** Every rank's eager slot of each parity, kept while calls repeat the shape. */
  #eagerViews: (TypedArray[] | undefined)[] = [];
  /** Every rank's last view each parity's exchange returned. */
  #peerViewCache: (TypedArray | undefined)[][] = [[], []];
  /** Whether every rank's view in the last exchange came in its eager slot. */
  #allInSlot = false;

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
   * after every peer has arrived at the next arrival, so they have read them.
   */
  barrier(stamp: number): void {
    const control = this.#control;
    const ctrl = this.#ctrl;
    const seq = ++control.arriveSeq;
    const mine = control.word(this.#rank, RANK_WORD.STAMP + (seq & 1) * 2);
    storeStamp(ctrl, mine, stamp);
    const digest = control.word(this.#rank, RANK_WORD.DIGEST + (seq & 1));
    ctrl[digest] = control.pipeDigest;
    control.publish(control.word(this.#rank, RANK_WORD.ARRIVE_SEQ), seq);
    control.ringPeers();
    const arrival = this.#arrival;
    arrival.seq = seq;
    arrival.stamp = stamp;
    arrival.next = 0;
    control.waitUntil(this.#allArrived, this.#describe, this.#firstMissing, this.#stalled);
    if (arrival.gone) throw control.peerGone(arrival.next, this.#describe());
    for (let r = 0; r < this.#size; r++) {
      const stampOfR = loadStamp(ctrl, mine + (r - this.#rank) * CTRL.RANK_WORDS);
      if (stampOfR !== stamp) {
        throw control.calls?.mismatch(r, stamp, stampOfR) ??
          new MismatchError(
            `Rank ${control.ids[this.#rank]} and rank ${control.ids[r]} are in different calls`,
            { failedRank: control.ids[r] },
          );
      }
      if (ctrl[digest + (r - this.#rank) * CTRL.RANK_WORDS] !== control.pipeDigest) {
        throw control.pipelineMismatch(r);
      }
    }
    control.pipeDigest = DIGEST_SEED;
  }

  /** See `SharedAccess.exchangeViews`. */
  exchangeViews(view: TypedArray, stamp: number, anyLength = false): (TypedArray | undefined)[] {
    return this.#exchangeViews(view, stamp, anyLength, -1);
  }

  /**
   * Publishes `view` and returns every rank's, as `exchangeViews`; with `slotAt` ≥ 0 this rank's
   * came in its eager slot at that byte, and so does any peer's whose descriptor says so.
   */
  #exchangeViews(
    view: TypedArray,
    stamp: number,
    anyLength: boolean,
    slotAt: number,
  ): (TypedArray | undefined)[] {
    const control = this.#control;
    const ctrl = this.#ctrl;
    const parity = this.#nextParity;
    const dtype = dtypeOf(view), code = DTYPES.indexOf(dtype);
    const mine = control.word(this.#rank, RANK_WORD.VIEW_DESC + parity * 3);
    const inHeap = memoryOf(view.buffer) === control.heaps[this.#rank];
    ctrl[mine] = slotAt >= 0 ? slotAt : inHeap ? view.byteOffset : 0;
    ctrl[mine + 1] = view.length;
    ctrl[mine + 2] = code | (slotAt >= 0 ? IN_SLOT : 0);
    this.barrier(stamp);
    const views = new Array<TypedArray | undefined>(this.#size);
    this.#allInSlot = true;
    for (let r = 0; r < this.#size; r++) {
      const desc = mine + (r - this.#rank) * CTRL.RANK_WORDS;
      const at = ctrl[desc] >>> 0, count = ctrl[desc + 1], word = ctrl[desc + 2];
      if ((!anyLength && count !== view.length) || (word & ~IN_SLOT) !== code) {
        const ids = control.ids;
        throw new MismatchError(
          `Rank ${ids[this.#rank]} exchanged ${view.length} × ${dtype} but rank ${ids[r]} ` +
            `exchanged ${count} × ${DTYPES[word & ~IN_SLOT]}; every rank must pass the same ` +
            `count and dtype`,
          { failedRank: ids[r] },
        );
      }
      if (!(word & IN_SLOT)) this.#allInSlot = false;
      const offset = word & IN_SLOT ? control.eagerArea(r) + parity * EAGER_BYTES + at : at;
      // Offset 0 never names a heap buffer: that rank published a view outside its heap.
      views[r] = offset === 0 ? undefined : this.#peerView(parity, r, dtype, offset, count);
    }
    return views;
  }

  /** Rank `r`'s view at `offset` of its heap, reused while calls repeat it (views cost ~100 ns). */
  #peerView(parity: number, r: number, dtype: Dtype, offset: number, count: number): TypedArray {
    const buffer = heapBuffer(this.#control.heaps[r]);
    const cached = this.#peerViewCache[parity][r];
    if (
      cached?.buffer === buffer && cached.byteOffset === offset && cached.length === count &&
      dtypeOf(cached) === dtype
    ) return cached;
    return this.#peerViewCache[parity][r] = makeView(dtype, buffer, offset, count);
  }

  /** See `SharedAccess.exchangeViewsBeside`. */
  exchangeViewsBeside(
    view: TypedArray,
    beside: TypedArray,
    stamp: number,
    anyLength = false,
    inSlot = false,
  ): { views: (TypedArray | undefined)[]; besides: TypedArray[]; inSlot: boolean } {
    if (beside.byteLength > EAGER_BYTES) {
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
    // Equal stamps mean equal shapes of `beside`, as eagerExchange's.
    const parity = this.#nextParity;
    const besides = this.#eagerSlots(parity, dtypeOf(beside), beside.length);
    copy(besides[this.#rank], beside);
    const at = inSlot && this.fitsSlot(view, beside) ? this.#slotDataAt(beside) : -1;
    if (at >= 0) {
      const area = this.#control.eagerArea(this.#rank) + parity * EAGER_BYTES;
      copy(this.#peerView(parity, this.#rank, dtypeOf(view), area + at, view.length), view);
    }
    const views = this.#exchangeViews(view, stamp, anyLength, at);
    return { views, besides, inSlot: this.#allInSlot };
  }

  /** See `SharedAccess.fitsSlot`. */
  fitsSlot(view: TypedArray, beside: TypedArray): boolean {
    return beside.byteLength <= EAGER_BYTES &&
      this.#slotDataAt(beside) + view.byteLength <= EAGER_BYTES;
  }

  /** Where a view carried in an eager slot begins: past `beside` where that lies in the slot. */
  #slotDataAt(beside: TypedArray): number {
    return beside.byteLength <= EAGER_INLINE_BYTES ? 0 : Math.ceil(beside.byteLength / 8) * 8;
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
    if (cached?.[0].length === count && dtypeOf(cached[0]) === dtype) return cached;
    const control = this.#control;
    const inline = count * DTYPE_INFO[dtype].bytes <= EAGER_INLINE_BYTES;
    return this.#eagerViews[parity] = control.heaps.map((heap, r) =>
      inline
        ? makeView(
          dtype,
          control.buffer,
          control.word(r, RANK_WORD.EAGER_INLINE) * 4 + parity * EAGER_INLINE_BYTES,
          count,
        )
        : makeView(dtype, heapBuffer(heap), control.eagerArea(r) + parity * EAGER_BYTES, count)
    );
  }

  /** What {@linkcode ShmArrivals.barrier} waits for, in fields so the eager path allocates nothing. */
  #arrival = { seq: 0, stamp: 0, next: 0, gone: false };
  #allArrived = (): boolean => {
    const a = this.#arrival;
    const control = this.#control;
    a.gone = false;
    for (; a.next < this.#size; a.next++) {
      if (a.next === this.#rank) continue;
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
