/**
 * The `shm` transport's pipelined calls (small bcast and reduce): a writer copies its data into
 * a slot of its own and returns without waiting for its readers, up to PIPE_SLOTS calls ahead of
 * the slowest, like MPI's eager sends. Every rank numbers the pipelined calls alike; a reader
 * checks the slot's call number and stamp, and each arrival checks the digest of their stamps.
 * @module
 */

import type { CommError } from "../errors.ts";
import { heapBuffer } from "../memory/heap.ts";
import { dtypeOf, makeView, type TypedArray } from "../types.ts";
import { copy } from "../../kernels/copy.ts";
import { EAGER_BYTES } from "./shm_arrivals.ts";
import { DIGEST_PRIME, type ShmControl } from "./shm_control.ts";
import { loadStamp, PIPE_SLOTS, PIPE_WORD, RANK_WORD, storeStamp } from "./shm_layout.ts";

/** Payload bytes of one pipeline slot: bcast and reduce up to this size do not wait for readers. */
export const PIPE_BYTES = 4 * 1024;
/** Pipelined calls between two publications of a rank's progress (≤ PIPE_SLOTS / 2). */
const PIPE_DONE_EVERY = 8;

/** One rank's pipelined calls. */
export class ShmPipeline {
  readonly #control: ShmControl;
  readonly #ctrl: Int32Array;
  readonly #rank: number;
  /** The current pipelined call's stamp. */
  #stamp = 0;
  /** Views of pipeline slots, by rank × slot; kept while calls repeat the shape. */
  #views: (TypedArray | undefined)[] = [];
  /** The slot header a read waits for and its writer, in fields so waits allocate nothing. */
  #slot = 0;
  #writer = 0;
  /** The last pipelined call every rank is known to have finished. */
  #allDone = 0;

  constructor(control: ShmControl) {
    this.#control = control;
    this.#ctrl = control.words;
    this.#rank = control.rank;
  }

  /** See `SharedAccess.pipeBegin`. */
  begin(stamp: number): void {
    const control = this.#control;
    const seq = control.pipeSeq = (control.pipeSeq + 1) | 0;
    this.#stamp = stamp;
    const words = control.word(this.#rank, RANK_WORD.PIPE_CURRENT_STAMP + (seq & 1) * 2);
    storeStamp(this.#ctrl, words, stamp);
    // FNV over the two words just written.
    const digest = Math.imul(control.pipeDigest ^ this.#ctrl[words], DIGEST_PRIME);
    control.pipeDigest = Math.imul(digest ^ this.#ctrl[words + 1], DIGEST_PRIME);
    control.publish(control.word(this.#rank, RANK_WORD.PIPE_CURRENT), seq);
  }

  /** See `SharedAccess.pipeWrite`. */
  write(view: TypedArray, reader?: number): void {
    const control = this.#control;
    // The slot last held call seq − PIPE_SLOTS (or earlier): every rank must be done with it.
    // Peers' progress is cached, so a writer that is not about to lap them reads no shared line.
    if (((control.pipeSeq - PIPE_SLOTS - this.#allDone) | 0) > 0) {
      if (!this.#slotFree()) control.waitUntil(this.#slotFree, this.#describe, reader);
    }
    copy(this.#view(this.#rank, view), view);
    const h = this.#header(this.#rank);
    storeStamp(this.#ctrl, h + PIPE_WORD.STAMP, this.#stamp);
    control.publish(h + PIPE_WORD.SEQ, control.pipeSeq);
    this.#finished();
    if (reader !== undefined) control.ring(reader);
    else control.ringPeers();
  }

  /** See `SharedAccess.pipeRead`. */
  read(writer: number, like: TypedArray): TypedArray {
    const control = this.#control;
    const h = this.#slot = this.#header(writer);
    this.#writer = writer;
    if (!this.#slotWritten()) {
      control.waitUntil(this.#slotReadable, this.#describe, writer, this.#stalled);
    }
    // A plain read: the atomic load of the wait above already ordered it.
    if (this.#ctrl[h + PIPE_WORD.SEQ] !== control.pipeSeq) throw this.#writerElsewhere(writer);
    const theirs = loadStamp(this.#ctrl, h + PIPE_WORD.STAMP);
    if (theirs !== this.#stamp) {
      throw control.calls?.mismatch(writer, this.#stamp, theirs) ??
        control.pipelineMismatch(writer);
    }
    return this.#view(writer, like);
  }

  /** See `SharedAccess.pipeEnd`. */
  end(): void {
    if (this.#finished()) this.#control.ringPeers();
  }

  /**
   * The stamp of the pipelined call `writer` is in, if it is this rank's call (read like a
   * seqlock: a parity's words are rewritten only after the writer has moved on twice).
   */
  #writerStamp(writer: number): number | undefined {
    const control = this.#control;
    const seq = control.pipeSeq;
    const current = control.word(writer, RANK_WORD.PIPE_CURRENT);
    if (Atomics.load(this.#ctrl, current) !== seq) return undefined;
    const words = control.word(writer, RANK_WORD.PIPE_CURRENT_STAMP + (seq & 1) * 2);
    const stamp = loadStamp(this.#ctrl, words);
    return Atomics.load(this.#ctrl, current) === seq ? stamp : undefined;
  }

  /** Why `writer`'s slot does not hold this rank's pipelined call. */
  #writerElsewhere(writer: number): CommError {
    const control = this.#control;
    const theirs = this.#writerStamp(writer);
    if (theirs !== undefined && control.calls) {
      return control.calls.mismatch(writer, this.#stamp, theirs);
    }
    if (control.closed(writer)) return control.peerGone(writer, this.#describe());
    return control.pipelineMismatch(writer);
  }

  /**
   * Publishes that this rank is done with the current pipelined call, every
   * {@linkcode PIPE_DONE_EVERY} calls (each publication costs a fence, or a cache line a writer
   * must fetch; a writer waits for calls PIPE_SLOTS behind its own, which every rank publishes
   * before it can wait on that writer).
   */
  #finished(): boolean {
    const control = this.#control;
    if ((control.pipeSeq & (PIPE_DONE_EVERY - 1)) !== 0) return false;
    control.publish(control.word(this.#rank, RANK_WORD.PIPE_DONE), control.pipeSeq);
    return true;
  }

  /** Int32 index of `rank`'s pipeline slot header for the current pipelined call. */
  #header(rank: number): number {
    const slot = this.#control.pipeSeq & (PIPE_SLOTS - 1);
    return this.#control.word(rank, RANK_WORD.PIPE + slot * PIPE_WORD.WORDS);
  }

  /**
   * `rank`'s pipeline slot of the current call viewed like `like`: inside the slot's header line
   * when it fits there (one line crosses cores per call, and reading consecutive calls walks
   * consecutive lines), else in the rank's heap after its two eager slots.
   */
  #view(rank: number, like: TypedArray): TypedArray {
    const control = this.#control;
    const slot = control.pipeSeq & (PIPE_SLOTS - 1);
    const i = rank * PIPE_SLOTS + slot;
    const cached = this.#views[i];
    if (cached?.length === like.length && cached.constructor === like.constructor) return cached;
    const [buffer, offset] = like.byteLength <= PIPE_WORD.INLINE_BYTES
      ? [control.buffer, (this.#header(rank) + PIPE_WORD.INLINE) * 4]
      : [
        heapBuffer(control.heaps[rank]),
        control.eagerArea(rank) + 2 * EAGER_BYTES + slot * PIPE_BYTES,
      ];
    return this.#views[i] = makeView(dtypeOf(like), buffer, offset, like.length);
  }

  #slotFree = (): boolean => {
    const control = this.#control;
    let least = control.pipeSeq;
    for (let r = 0; r < control.size; r++) {
      if (r === this.#rank) continue;
      const done = Atomics.load(this.#ctrl, control.word(r, RANK_WORD.PIPE_DONE));
      if (((done - least) | 0) < 0) least = done;
    }
    this.#allDone = least;
    return ((control.pipeSeq - PIPE_SLOTS - least) | 0) <= 0;
  };
  #slotWritten = (): boolean =>
    ((Atomics.load(this.#ctrl, this.#slot + PIPE_WORD.SEQ) - this.#control.pipeSeq) | 0) >= 0;
  /**
   * The slot is written, or will never be: its writer is in this call with another stamp, has
   * gone past it, or has closed (checks read the writer's line only while waiting).
   */
  #slotReadable = (): boolean => {
    if (this.#slotWritten()) return true;
    const control = this.#control;
    const w = this.#writer;
    const current = Atomics.load(this.#ctrl, control.word(w, RANK_WORD.PIPE_CURRENT));
    if (((current - control.pipeSeq) | 0) > 0 || control.closed(w)) return true;
    const theirs = this.#writerStamp(w);
    return theirs !== undefined && theirs !== this.#stamp;
  };
  /**
   * A read that stalls: a writer that has made an arrival this rank has not, without writing
   * this call's slot, is in another call (a collective that is not pipelined). The slot is looked
   * at again after the arrival: a writer that wrote it and then went on to its next call (a busy
   * machine kept this rank from reading) published the slot first.
   */
  #stalled = (): void => {
    const control = this.#control;
    const w = this.#writer;
    const arrived = Atomics.load(this.#ctrl, control.word(w, RANK_WORD.ARRIVE_SEQ));
    const ahead = (arrived - control.arriveSeq) | 0;
    if (ahead <= 0 || this.#slotWritten()) return;
    const parity = control.word(w, RANK_WORD.STAMP + ((control.arriveSeq + 1) & 1) * 2);
    throw control.otherCall(
      w,
      this.#stamp,
      ahead === 1 ? loadStamp(this.#ctrl, parity) : undefined,
    );
  };
  #describe = (): string => this.#control.calls?.describe(this.#stamp) ?? "pipelined call";
}
