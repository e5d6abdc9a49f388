/**
 * One `shm` rank's view of the group's control block (shm_layout.ts): its words, the counters it
 * publishes, the doorbells that wake sleeping peers, and the wait every part of the transport
 * blocks in. Waiting spins briefly and then sleeps on the rank's doorbell: pure spinning collapses
 * once ranks outnumber cores (docs/transports/shm.md, "Waiting").
 * @module
 */

import { type CommError, CommTimeoutError, MismatchError, noticeError } from "../errors.ts";
import { DEFAULT_TIMEOUT_MS } from "../types.ts";
import { STALL_PROBE_MS } from "./inbox.ts";
import { CTRL, RANK_WORD, readAbort } from "./shm_layout.ts";
import type { CallCheck } from "./transport.ts";
import { platform, type SchedulerCalls } from "../platform.ts";

/**
 * How long a wait spins before it sleeps. When every rank has a core, the spin must outlast a
 * sleeping peer's wake-up, or two ranks fall into a convoy in which every op costs one wake-up —
 * unless the awaited rank last ran on this rank's own core: then spinning only keeps it from
 * running, and the wait sleeps at once. When ranks outnumber cores a spinning rank steals the
 * core its peer needs, so it does not spin (it yields, then sleeps).
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
/** FNV-1a's offset basis and prime: the digest of pipelined calls. */
export const DIGEST_SEED = 0x811c9dc5 | 0, DIGEST_PRIME = 0x01000193;

/** One rank's control words, counters, doorbells and waits. */
export class ShmControl {
  readonly rank: number;
  readonly size: number;
  /** The control block, as Int32 words and as its buffer. */
  readonly words: Int32Array;
  readonly buffer: SharedArrayBuffer;
  /** Every rank's heap memory. */
  readonly heaps: WebAssembly.Memory[];
  /**
   * The group-wide rank of each rank here (messages, errors and call checks name those): the
   * same numbers unless these ranks are one host's part of a larger group (hierarchy.ts).
   */
  readonly ids: readonly number[];
  /** The communicator's calls, for the checks of every part. */
  calls?: CallCheck;
  /** Arrivals this rank has made (published as ARRIVE_SEQ). */
  arriveSeq = 0;
  /** The pipelined call this rank is in (published as PIPE_CURRENT): a per-group count. */
  pipeSeq = 0;
  /** Digest of the stamps of the pipelined calls since the last arrival (checked there). */
  pipeDigest = DIGEST_SEED;
  /** Advances this rank's messages: whether anything moved. Every wait drives it. */
  progress: () => boolean = () => false;
  /** What `peer`'s goodbye shows against this rank's calls, once it has closed (the transport's). */
  judgeGoodbye: (peer: number) => CommError | undefined = () => undefined;
  /** The failure that ended this rank's part in the group. */
  aborted?: CommError;

  /** Every rank's eager area once published (see {@linkcode eagerArea}). */
  readonly #eagerAreas: number[] = [];
  readonly #timeoutMs: number;
  readonly #spinMs: number;
  readonly #sched?: SchedulerCalls;
  /** Ranks outnumber cores: waits yield from the first poll. */
  readonly #yieldAtOnce: boolean;

  /** Set where plain stores publish (`Platform.heavyFence`); run by a rank about to sleep. */
  readonly #heavyFence = platform.heavyFence;

  constructor(
    rank: number,
    control: SharedArrayBuffer,
    heaps: WebAssembly.Memory[],
    timeoutMs = DEFAULT_TIMEOUT_MS,
    ids: readonly number[] = heaps.map((_, r) => r),
    machineRanks = heaps.length,
  ) {
    this.rank = rank;
    this.size = heaps.length;
    this.ids = ids;
    this.buffer = control;
    this.words = new Int32Array(control);
    this.heaps = heaps;
    this.#timeoutMs = timeoutMs;
    this.#sched = platform.scheduler;
    this.#spinMs = spinMs(machineRanks);
    this.#yieldAtOnce = this.#spinMs === 0 && this.#sched !== undefined;
  }

  /** Int32 index of word `word` of `rank`'s lines. */
  word(rank: number, word: number): number {
    return CTRL.RANK_BASE + rank * CTRL.RANK_WORDS + word;
  }

  /** Whether `rank` has closed its communicator. */
  closed(rank: number): boolean {
    return Atomics.load(this.words, this.word(rank, RANK_WORD.CLOSED)) !== 0;
  }

  /** Byte offset in `rank`'s heap of its eager area: two eager slots, then the pipeline slots. */
  eagerArea(rank: number): number {
    // Published once, at join: kept, so that reading it never pulls the rank's sleep line across.
    return this.#eagerAreas[rank] ||=
      Atomics.load(this.words, this.word(rank, RANK_WORD.EAGER_OFFSET)) >>> 0;
  }

  /**
   * Stores `value` at control word `index` (or at `words[index]`, shared words elsewhere) for
   * peers polling it: a plain store where the heavy fence makes that safe
   * (`Platform.heavyFence`), else an atomic one.
   */
  publish(index: number, value: number, words: Int32Array = this.words): void {
    if (this.#heavyFence) words[index] = value;
    else Atomics.store(words, index, value);
  }

  /**
   * Wakes `peer` if it sleeps. Callers publish their change first; a sleeper sets SLEEPING, runs
   * the heavy fence where there is one, reads its doorbell, re-checks, then waits on the doorbell
   * value — so either it sees the change or this sees SLEEPING (Dekker; with plain publications
   * the sleeper's heavy fence stands in for the fence this side leaves out). Spinning peers cost
   * one load.
   */
  ring(peer: number): void {
    if (Atomics.load(this.words, this.word(peer, RANK_WORD.SLEEPING)) === 0) return;
    const bell = this.word(peer, RANK_WORD.DOORBELL);
    Atomics.add(this.words, bell, 1);
    Atomics.notify(this.words, bell);
  }

  /** {@linkcode ShmControl.ring}s every other rank. */
  ringPeers(): void {
    for (let p = 0; p < this.size; p++) if (p !== this.rank) this.ring(p);
  }

  /** Throws the failure that aborted this rank, or the one raised in the control block. */
  checkAbort(): void {
    if (this.aborted) throw this.aborted;
    if (Atomics.load(this.words, CTRL.ABORT) !== 0) {
      const { failedRank, reason, by } = readAbort(this.buffer)!;
      this.aborted = noticeError(this.ids[this.rank], by, failedRank, reason);
      throw this.aborted;
    }
  }

  /** The error of a wait (for `what`) on `peer`, which has closed: what its goodbye shows. */
  peerGone(peer: number, what: string): CommError {
    return this.judgeGoodbye(peer) ??
      new MismatchError(
        `Rank ${this.ids[this.rank]} waited for ${what} but rank ${this.ids[peer]} had closed ` +
          `its communicator`,
        { failedRank: this.ids[peer] },
      );
  }

  /** Rank `r` is in another call than this rank's (with `stamp`): `theirs`, when known. */
  otherCall(r: number, stamp: number, theirs?: number): MismatchError {
    if (theirs !== undefined && this.calls) return this.calls.mismatch(r, stamp, theirs);
    return new MismatchError(
      `Rank ${this.ids[this.rank]} called ${this.calls?.describe(stamp) ?? "a collective"} but ` +
        `rank ${this.ids[r]} is in another call: every rank must make the same calls in the same ` +
        `order`,
      { failedRank: this.ids[r] },
    );
  }

  /** Rank `r` made other small pipelined calls than this rank since their last arrival. */
  pipelineMismatch(r: number): MismatchError {
    return new MismatchError(
      `Rank ${this.ids[this.rank]} and rank ${this.ids[r]} made different small bcast/reduce ` +
        `calls since their last synchronizing call (their number, roots, ops, counts or dtypes ` +
        `differ)`,
      { failedRank: this.ids[r] },
    );
  }

  /** Publishes the CPU this rank runs on, for peers deciding whether to spin (see spinMs). */
  #publishCpu(): void {
    if (!this.#sched) return;
    // Rewritten only when it changed: peers read this line on every arrival (ring).
    const word = this.word(this.rank, RANK_WORD.CPU), cpu = this.#sched.currentCpu() + 1;
    if (this.words[word] !== cpu) this.words[word] = cpu;
  }

  /** Whether `peer` (the rank waited for) last began a wait on the CPU this rank runs on. */
  #onThisCpu(peer: number | (() => number) | undefined): boolean {
    const who = typeof peer === "function" ? peer() : peer;
    if (who === undefined || who === this.rank || !this.#sched) return false;
    const theirs = this.words[this.word(who, RANK_WORD.CPU)] - 1;
    return theirs >= 0 && theirs === this.#sched.currentCpu();
  }

  /**
   * Spins, then sleeps, advancing all traffic, until `done()`; throws on abort or after the
   * timeout without progress (traffic moving, or `peer`, the one waited for, changing as ranks
   * arrive one by one: a large group starts over many seconds). `stalled` runs once the wait has
   * slept {@linkcode STALL_PROBE_MS} without progress.
   */
  waitUntil(
    done: () => boolean,
    describe: string | (() => string),
    peer?: number | (() => number),
    stalled?: () => void,
  ): void {
    let polls = 0;
    let spinSince = -1;
    let idleSince = -1;
    let waitingFor = -1;
    // Ranks that outnumber cores hand their core to a peer from the first poll (spinning even 64
    // polls holds the awaited rank's core for ~10 µs) and for YIELD_MS, paying no wake-up, before
    // they sleep.
    let yielding = this.#yieldAtOnce;
    /** Whether more threads than cores are runnable (asked once per wait, as it starts spinning). */
    let busy = false;
    while (!done()) {
      if (this.progress()) {
        polls = 0;
        spinSince = idleSince = -1;
        yielding = this.#yieldAtOnce;
        continue;
      }
      this.checkAbort();
      if (yielding) this.#sched!.yieldCore();
      if (++polls % POLLS_PER_CLOCK !== 0) continue;
      const spun = performance.now();
      if (spinSince < 0) {
        spinSince = spun;
        this.#publishCpu();
        // A rank its launcher could not place on a CPU of its own (another process's ranks on the
        // same cores, unseen) may be crowded all the same: then it yields and sleeps as
        // oversubscribed ranks do. A bound rank spins: its peer runs on another CPU.
        busy = this.#spinMs > 0 && this.#sched !== undefined && !platform.boundToCpu() &&
          platform.crowded();
      }
      const spunMs = spun - spinSince;
      if (!busy && spunMs < this.#spinMs && !this.#onThisCpu(peer)) continue;
      yielding = (this.#yieldAtOnce || busy) && spunMs < YIELD_MS;
      if (yielding) continue;
      const sleeping = this.word(this.rank, RANK_WORD.SLEEPING);
      const bell = this.word(this.rank, RANK_WORD.DOORBELL);
      Atomics.store(this.words, sleeping, 1);
      this.#heavyFence?.(); // peers' plain publications so far are visible to the checks below
      const seen = Atomics.load(this.words, bell);
      if (!this.progress() && !done()) Atomics.wait(this.words, bell, seen, SLEEP_SLICE_MS);
      Atomics.store(this.words, sleeping, 0);
      const now = performance.now();
      const who = typeof peer === "function" ? peer() : peer;
      if (idleSince < 0 || (who ?? -1) !== waitingFor) {
        idleSince = now;
        waitingFor = who ?? -1;
      } else if (stalled && now - idleSince > STALL_PROBE_MS && !done()) {
        stalled();
        stalled = undefined;
      } else if (now - idleSince > this.#timeoutMs) {
        throw new CommTimeoutError(
          `Rank ${this.ids[this.rank]} timed out after ${this.#timeoutMs} ms waiting for ` +
            `${who === undefined ? "all ranks" : `rank ${this.ids[who]}`}: ` +
            (typeof describe === "string" ? describe : describe()),
          { failedRank: who === undefined ? undefined : this.ids[who] },
        );
      }
    }
    // An operation that completed stands; a failure not yet seen here fails the next wait.
    if (this.aborted) throw this.aborted;
  }
}
