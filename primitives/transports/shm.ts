/**
 * The `shm` transport: Web Workers exchanging bytes through shared-memory rings, synchronised
 * with Atomics, and giving direct algorithms access to every peer's heap
 * ({@linkcode SharedAccess}). Its parts share one rank's view of the control block
 * (shm_control.ts: words, doorbells, the wait): messages (shm_rings.ts), arrivals
 * (shm_arrivals.ts) and pipelined calls (shm_pipeline.ts). This file joins them and says goodbye.
 * @module
 */

import { type CommError, CommTimeoutError, failureNotice } from "../errors.ts";
import type { TypedArray } from "../types.ts";
import { ClosingCheck, type Goodbye } from "./closing_check.ts";
import { EAGER_BYTES, ShmArrivals } from "./shm_arrivals.ts";
import { ShmControl } from "./shm_control.ts";
import {
  createShmSetup,
  loadStamp,
  PIPE_SLOTS,
  raiseAbort,
  RANK_WORD,
  type ShmSetup,
  shmSetupBytes,
  storeStamp,
} from "./shm_layout.ts";
import { PIPE_BYTES, ShmPipeline } from "./shm_pipeline.ts";
import { ShmRings } from "./shm_rings.ts";
import type {
  CallCheck,
  SharedAccess,
  Transport,
  TransportFacts,
  WorkersTransport,
} from "./transport.ts";

/** Stamp of the joining barrier: every rank's is 0, the stamp of no call. */
const JOIN_STAMP = 0;

/** Options of {@linkcode ShmTransport}. */
export interface ShmTransportOptions {
  /** Milliseconds a wait may go without progress before it rejects. @default {30000} */
  timeoutMs?: number;
  /**
   * The group-wide rank of each rank of this shm group, when it is one host's part of a larger
   * group (hierarchy.ts): messages and errors name those. @default {the ranks themselves}
   */
  ids?: readonly number[];
  /**
   * Ranks this machine runs in all, when more than this group's (the other processes of a
   * hierarchical group on this host): waits stop spinning once they outnumber the cores.
   * @default {the group's size}
   */
  machineRanks?: number;
}

/** Shared-memory transport between workers of one process. */
export class ShmTransport implements Transport, SharedAccess {
  readonly name = "shm" as const;
  readonly facts: TransportFacts = SHM;
  readonly rank: number;
  readonly size: number;
  readonly eagerBytes = EAGER_BYTES;
  readonly pipeBytes = PIPE_BYTES;
  readonly shared: SharedAccess = this;
  readonly #control: ShmControl;
  readonly #rings: ShmRings;
  readonly #arrivals: ShmArrivals;
  readonly #pipeline: ShmPipeline;
  readonly #goodbyes: ClosingCheck;

  /**
   * Connects rank `rank` of `heaps.length` ranks. `heaps[r]` is rank r's heap memory;
   * `eagerOffset` is where this rank's eager area (EAGER_AREA_BYTES) lives in its own heap.
   */
  constructor(
    rank: number,
    setup: ShmSetup & { heaps: WebAssembly.Memory[]; eagerOffset: number },
    options: ShmTransportOptions = {},
  ) {
    const control = this.#control = new ShmControl(
      rank,
      setup.control,
      setup.heaps,
      options.timeoutMs,
      options.ids,
      options.machineRanks,
    );
    this.rank = rank;
    this.size = control.size;
    this.#rings = new ShmRings(control, setup.rings, (error) => this.abort(error));
    this.#arrivals = new ShmArrivals(control);
    this.#pipeline = new ShmPipeline(control);
    this.#goodbyes = new ClosingCheck(rank, this.size, undefined, options.ids);
    control.progress = this.#rings.progress;
    control.judgeGoodbye = (peer) =>
      this.#goodbyes.heard(peer, this.#goodbyeOf(peer), this.#rings.sent[peer]);
    Atomics.store(control.words, control.word(rank, RANK_WORD.EAGER_OFFSET), setup.eagerOffset);
    // Joining is collective: a rank's first eager exchange reads every peer's slot offset, so no
    // rank may start before all have published theirs.
    this.barrier(JOIN_STAMP);
  }

  /** Bytes each rank must reserve in its heap for eager and pipeline slots. */
  static readonly EAGER_AREA_BYTES = 2 * EAGER_BYTES + PIPE_SLOTS * PIPE_BYTES;

  get calls(): CallCheck | undefined {
    return this.#control.calls;
  }

  set calls(calls: CallCheck | undefined) {
    this.#control.calls = calls;
    this.#goodbyes.attach(calls);
  }

  send(peer: number, data: Uint8Array, tag: number, stamp: number): Promise<void> {
    return this.#rings.send(peer, data, tag, stamp);
  }

  recv(peer: number, into: Uint8Array, tag: number): Promise<number> {
    return this.#rings.recv(peer, into, tag);
  }

  probe(peers: readonly number[], tag: number): Promise<number> {
    return this.#rings.probe(peers, tag);
  }

  /** The first of `peers` with an unclaimed message of `tag`, now (see `ShmRings.peek`). */
  peek(peers: readonly number[], tag: number): number | undefined {
    return this.#rings.peek(peers, tag);
  }

  barrier(stamp: number): void {
    this.#arrivals.barrier(stamp);
  }

  exchangeViews(view: TypedArray, stamp: number, anyLength = false): (TypedArray | undefined)[] {
    return this.#arrivals.exchangeViews(view, stamp, anyLength);
  }

  eagerExchange(view: TypedArray, stamp: number): TypedArray[] {
    return this.#arrivals.eagerExchange(view, stamp);
  }

  exchangeViewsBeside(
    view: TypedArray,
    beside: TypedArray,
    stamp: number,
    anyLength = false,
    inSlot = false,
  ): { views: (TypedArray | undefined)[]; besides: TypedArray[]; inSlot: boolean } {
    return this.#arrivals.exchangeViewsBeside(view, beside, stamp, anyLength, inSlot);
  }

  fitsSlot(view: TypedArray, beside: TypedArray): boolean {
    return this.#arrivals.fitsSlot(view, beside);
  }

  pipeBegin(stamp: number): void {
    this.#pipeline.begin(stamp);
  }

  pipeWrite(view: TypedArray, reader?: number): void {
    this.#pipeline.write(view, reader);
  }

  pipeRead(writer: number, like: TypedArray): TypedArray {
    return this.#pipeline.read(writer, like);
  }

  pipeEnd(): void {
    this.#pipeline.end();
  }

  abort(error: CommError): void {
    if (this.#control.aborted) return;
    this.#control.aborted = error;
    const me = this.#control.ids[this.rank];
    const { failedRank, reason } = failureNotice(error, me);
    raiseAbort(this.#control.buffer, this.size, failedRank, reason, me);
  }

  /**
   * Says goodbye (closing_check.ts): publishes this rank's calls, waits (up to the timeout) until every
   * peer has closed, draining what they send meanwhile, and judges their goodbyes. Throws what
   * that finds, or the failure that aborted the group.
   */
  close(): void {
    const control = this.#control;
    this.#rings.clear();
    control.checkAbort();
    const summary = control.calls?.summary();
    const mine = (word: number) => control.word(this.rank, word);
    control.words[mine(RANK_WORD.CLOSED_CALLS)] = summary ? summary.calls + 1 : 0;
    control.words[mine(RANK_WORD.CLOSED_DIGEST)] = summary?.digest ?? 0;
    storeStamp(control.words, mine(RANK_WORD.CLOSED_LAST), summary?.last ?? 0);
    Atomics.store(control.words, mine(RANK_WORD.CLOSED), 1);
    control.ringPeers();
    try {
      control.waitUntil(
        this.#allClosed,
        "the other ranks to close their communicators",
        this.#firstOpen,
      );
    } catch (e) {
      if (!(e instanceof CommTimeoutError)) throw e; // a peer still running judges its own goodbye
    }
    let problem: CommError | undefined;
    for (let r = 0; r < this.size && !problem; r++) {
      if (r !== this.rank && control.closed(r)) problem = control.judgeGoodbye(r);
    }
    problem ??= this.#goodbyes.closing(this.#rings.unclaimed(), this.#rings.sent);
    if (problem) {
      this.abort(problem);
      throw problem;
    }
  }

  /** The goodbye `peer` published when it closed. */
  #goodbyeOf(peer: number): Goodbye {
    const words = this.#control.words;
    const word = (w: number) => this.#control.word(peer, w);
    const calls = words[word(RANK_WORD.CLOSED_CALLS)];
    const digest = words[word(RANK_WORD.CLOSED_DIGEST)] >>> 0;
    const last = loadStamp(words, word(RANK_WORD.CLOSED_LAST));
    const taken = this.#rings.taken(peer);
    return { summary: calls === 0 ? undefined : { calls: calls - 1, digest, last }, taken };
  }

  #allClosed = (): boolean => this.#firstOpen() === this.rank;
  #firstOpen = (): number => {
    for (let r = 0; r < this.size; r++) if (r !== this.rank && !this.#control.closed(r)) return r;
    return this.rank;
  };
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
  bounds: { latency: "cacheLine", bandwidth: "memory" },
  prepare(size) {
    const setup = createShmSetup(size);
    return {
      forRank: () => ({ handed: setup, transfer: [] }),
      abort: (failedRank, reason) => raiseAbort(setup.control, size, failedRank, reason),
    };
  },
  join(rank, { handed, heaps, heap, timeoutMs, ids, machineRanks }) {
    const eager = heap.alloc("f64", ShmTransport.EAGER_AREA_BYTES / 8);
    const setup = { ...(handed as ShmSetup), heaps, eagerOffset: eager.byteOffset };
    return new ShmTransport(rank, setup, { timeoutMs, ids, machineRanks });
  },
};
