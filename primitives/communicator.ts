/**
 * The Communicator: one rank's handle on a group of ranks. It validates arguments, picks an
 * algorithm from the registry, and runs it over the transport.
 * @module
 */

import { divide } from "../kernels/reduce.ts";
import { CallBook, MAX_TAG } from "./call_book.ts";
import { barrierDissemination } from "./collectives/barrier_dissemination.ts";
import { CollectiveContext } from "./collectives/context.ts";
import { CommError, failureNotice, MismatchError, PeerFailedError } from "./errors.ts";
import { asCommBuffer, type BufferLike, CommBuffer, HostBuffer } from "./memory/comm_buffer.ts";
import type { RankMemory } from "./memory/rank_memory.ts";
import {
  type AlgorithmNeed,
  ALGORITHMS,
  algorithmsFor,
  autoAlgorithm,
  type CollectiveName,
  TRANSPORTS,
} from "./registry.ts";
import { callStamp } from "./stamp.ts";
import { bytesOf, type Transport } from "./transports/transport.ts";
import {
  type Dtype,
  DTYPE_INFO,
  dtypeOf,
  DTYPES,
  type KernelOp,
  MAX_BYTES,
  MEMORY_KINDS,
  type MemoryKind,
  REDUCE_OPS,
  type ReduceOp,
  type TransportName,
  type TypedArray,
} from "./types.ts";

export { MAX_TAG };

/** Options of {@linkcode Communicator.alloc}. */
export interface AllocOptions {
  /** Element type. @default {"f32"} */
  dtype?: Dtype;
  /** Memory kind: `shared` lives in the rank's heap, `host` in a private ArrayBuffer. @default {"shared"} */
  memory?: MemoryKind;
}

/** Options of collectives that pick an algorithm. */
export interface AlgorithmOptions {
  /** An algorithm name from the registry, or `auto`. @default {"auto"} */
  algorithm?: string;
}

/** Options of reductions. */
export interface ReduceOptions extends AlgorithmOptions {
  /** Reduce operator. @default {"sum"} */
  op?: ReduceOp;
  /** Out-of-place result buffer; when absent the input buffer is overwritten. */
  out?: BufferLike;
}

/** Options of rooted collectives. */
export interface RootOptions {
  /** Root rank. @default {0} */
  root?: number;
}

/** Options of point-to-point calls. */
export interface TagOptions {
  /** Message tag, 0 ≤ tag < 2^30. @default {0} */
  tag?: number;
}

/**
 * One rank's view of a group of `size` ranks.
 *
 * @example Allreduce in place
 * ```ts ignore
 * export async function run(comm: Communicator) {
 *   const buf = comm.alloc(1024);
 *   buf.view.fill(comm.rank + 1);
 *   await comm.allreduce(buf, { op: "sum" });
 * }
 * ```
 */
export class Communicator implements AsyncDisposable {
  /** This rank, 0 ≤ rank < size. */
  readonly rank: number;
  /** Number of ranks. */
  readonly size: number;
  #transport: Transport;
  #memory: RankMemory;
  #ctx: CollectiveContext;
  #calls: CallBook;
  #offers: readonly AlgorithmNeed[];
  #seq = 0;
  #closed = false;
  /** The failure that broke this communicator: every later call throws it. */
  #broken?: Error;

  /** Wraps a connected transport and this rank's memory. Launchers call this; users get one. */
  constructor(transport: Transport, memory: RankMemory) {
    this.rank = transport.rank;
    this.size = transport.size;
    this.#transport = transport;
    this.#memory = memory;
    this.#ctx = new CollectiveContext(transport, memory.heap);
    this.#calls = new CallBook(transport.rank);
    this.#offers = TRANSPORTS[transport.name].offers;
    transport.calls = this.#calls;
  }

  /** Name of the transport underneath. */
  get transport(): TransportName {
    return this.#transport.name;
  }

  /**
   * Allocates a zero-filled buffer of `count` elements of the memory kind asked for, which the
   * transport must carry; host kinds come back as a `HostBuffer` with a `view`.
   */
  alloc(count: number, options?: AllocOptions & { memory?: "host" | "shared" }): HostBuffer;
  /** Allocates a buffer of any memory kind the transport carries. */
  alloc(count: number, options: AllocOptions): CommBuffer;
  alloc(count: number, options: AllocOptions = {}): CommBuffer {
    const dtype = options.dtype ?? "f32";
    const memory = options.memory ?? "shared";
    if (!DTYPES.includes(dtype)) {
      throw new TypeError(`Unknown dtype ${dtype}: expected one of ${DTYPES.join(", ")}`);
    }
    if (!MEMORY_KINDS.includes(memory)) {
      throw new TypeError(
        `Unknown memory kind ${memory}: expected one of ${MEMORY_KINDS.join(", ")}`,
      );
    }
    checkCount(count, dtype, "allocate");
    const carried = TRANSPORTS[this.transport].memory;
    if (!carried.includes(memory)) {
      throw new TypeError(
        `Cannot allocate ${memory} memory on transport ${this.transport}: it carries ` +
          `${carried.join(", ")}`,
      );
    }
    return this.#memory.alloc(memory, dtype, count);
  }

  /** Returns a buffer's memory (optional; for long-running programs). */
  free(buf: CommBuffer): void {
    this.#memory.free(buf);
  }

  /** Sends `buf` to `peer`; resolves when `buf` may be reused. */
  async send(buf: BufferLike, peer: number, options: TagOptions = {}): Promise<void> {
    const cb = this.#host(this.#check(buf));
    this.#checkPeer(peer, "send to");
    const tag = this.#checkTag(options.tag ?? 0);
    try {
      await this.#transport.send(peer, bytesOf(cb.view), tag, P2P_STAMPS[cb.dtype]);
    } catch (e) {
      throw this.#broke(e);
    }
  }

  /** Receives the next message from `peer` with the tag into `buf` (lengths and dtypes must match). */
  async recv(buf: BufferLike, peer: number, options: TagOptions = {}): Promise<void> {
    const cb = this.#host(this.#check(buf));
    this.#checkPeer(peer, "receive from");
    const tag = this.#checkTag(options.tag ?? 0);
    let stamp;
    try {
      stamp = await this.#transport.recv(peer, bytesOf(cb.view), tag);
    } catch (e) {
      throw this.#broke(e);
    }
    if (stamp !== P2P_STAMPS[cb.dtype]) {
      throw this.#broke(
        new MismatchError(
          `Rank ${this.rank} received ${this.#calls.describe(stamp)} from rank ${peer} (tag ` +
            `${tag}) into ${cb.dtype}: sender and receiver must use the same dtype`,
          { failedRank: peer },
        ),
      );
    }
  }

  /** Copies `buf` on `root` into `buf` on every rank. */
  async bcast(buf: BufferLike, options: RootOptions & AlgorithmOptions = {}): Promise<void> {
    const view = this.#host(this.#check(buf)).view;
    const root = this.#checkRoot(options.root ?? 0, "broadcast from");
    const a = this.#pick("bcast", options.algorithm, view.byteLength);
    if (this.size === 1) return;
    try {
      const ctx = this.#begin(callStamp("bcast", dtypeOf(view), view.length, "sum", root, a.index));
      const pending = a.run(ctx, view, root);
      if (pending) await pending;
    } catch (e) {
      throw this.#broke(e);
    }
  }

  /** Reduces every rank's `buf` into `buf` (or `out`) on every rank. */
  async allreduce(buf: BufferLike, options: ReduceOptions = {}): Promise<void> {
    const input = this.#host(this.#check(buf)).view;
    const output = this.#output(input, options.out, "allreduce");
    const op = checkOp(options.op ?? "sum");
    const a = this.#pick("allreduce", options.algorithm, input.byteLength);
    if (this.size > 1) {
      try {
        const stamp = callStamp("allreduce", dtypeOf(input), input.length, op, 0, a.index);
        const pending = a.run(this.#begin(stamp), input, output, kernelOp(op));
        if (pending) await pending;
      } catch (e) {
        throw this.#broke(e);
      }
    } else if (output !== input) output.set(input);
    if (op === "avg") divide(output, this.size);
  }

  /** Reduces every rank's `buf` into `buf` (or `out`) on `root`; other ranks' buffers are unchanged. */
  async reduce(buf: BufferLike, options: ReduceOptions & RootOptions = {}): Promise<void> {
    const root = this.#checkRoot(options.root ?? 0, "reduce to");
    const input = this.#host(this.#check(buf)).view;
    const target = this.rank === root ? this.#output(input, options.out, "reduce") : input;
    const op = checkOp(options.op ?? "sum");
    if (target !== input) target.set(input);
    const a = this.#pick("reduce", options.algorithm, target.byteLength);
    if (this.size > 1) {
      try {
        const stamp = callStamp("reduce", dtypeOf(input), input.length, op, root, a.index);
        const pending = a.run(this.#begin(stamp), target, kernelOp(op), root);
        if (pending) await pending;
      } catch (e) {
        throw this.#broke(e);
      }
    }
    if (op === "avg" && this.rank === root) divide(target, this.size);
  }

  /** Gathers every rank's `send` (n elements) into `recv` (size × n), in rank order. */
  async allgather(
    send: BufferLike,
    recv: BufferLike,
    options: AlgorithmOptions = {},
  ): Promise<void> {
    const s = this.#host(this.#check(send)).view, r = this.#host(this.#check(recv)).view;
    this.#checkPair(s, r, r.length === s.length * this.size, "allgather", "recv = size × send");
    const a = this.#pick("allgather", options.algorithm, r.byteLength);
    if (this.size === 1) return r.set(s);
    try {
      const stamp = callStamp("allgather", dtypeOf(s), s.length, "sum", 0, a.index);
      const pending = a.run(this.#begin(stamp), s, r);
      if (pending) await pending;
    } catch (e) {
      throw this.#broke(e);
    }
  }

  /** Reduces every rank's `send` (size × n) and leaves block `rank` of the result in `recv` (n). */
  async reduceScatter(
    send: BufferLike,
    recv: BufferLike,
    options: Omit<ReduceOptions, "out"> = {},
  ): Promise<void> {
    const s = this.#host(this.#check(send)).view, r = this.#host(this.#check(recv)).view;
    this.#checkPair(s, r, s.length === r.length * this.size, "reduceScatter", "send = size × recv");
    const op = checkOp(options.op ?? "sum");
    const a = this.#pick("reduceScatter", options.algorithm, s.byteLength);
    if (this.size > 1) {
      try {
        const stamp = callStamp("reduceScatter", dtypeOf(r), r.length, op, 0, a.index);
        const pending = a.run(this.#begin(stamp), s, r, kernelOp(op));
        if (pending) await pending;
      } catch (e) {
        throw this.#broke(e);
      }
    } else r.set(s);
    if (op === "avg") divide(r, this.size);
  }

  /** Resolves once every rank has called `barrier`. */
  async barrier(): Promise<void> {
    this.#checkOpen();
    if (this.size === 1) return;
    try {
      const ctx = this.#begin(BARRIER_STAMP);
      if (this.#transport.shared) this.#transport.shared.barrier(ctx.stamp);
      else await barrierDissemination(ctx);
    } catch (e) {
      throw this.#broke(e);
    }
  }

  /**
   * Fails this rank's part of the group (like `ncclCommAbort`): every pending and later call on
   * this communicator rejects, and peers learn as soon as the transport can tell them that this
   * rank failed, and why (`reason`'s message), so they fail fast instead of timing out. Then
   * closes the communicator.
   */
  async abort(reason: unknown = new Error("aborted")): Promise<void> {
    if (!this.#broken) {
      const { failedRank, reason: why } = failureNotice(reason, this.rank);
      this.#broke(new PeerFailedError(failedRank, why));
    }
    await this[Symbol.asyncDispose]();
  }

  /** The algorithm `auto` picks for a collective on a buffer of `bytes` (for reports). */
  autoAlgorithm(collective: CollectiveName, bytes: number): string {
    return autoAlgorithm(collective, this.transport, bytes, this.size);
  }

  /** Closes the transport; later calls throw. */
  async [Symbol.asyncDispose](): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      await this.#transport.close();
    }
  }

  /**
   * Begins one collective call on more than one rank: the next tag and the call's stamp (judging
   * peers' data that arrived early). Callers run the call in a `try` whose `catch` breaks the
   * communicator on any failure.
   */
  #begin(stamp: number): CollectiveContext {
    const ctx = this.#ctx;
    ctx.tag = MAX_TAG + (this.#seq++ % MAX_TAG);
    ctx.stamp = stamp;
    this.#calls.begin(ctx.tag, stamp);
    return ctx;
  }

  /**
   * Marks the communicator broken by `e` and aborts the transport, so in-flight operations stop
   * and peers learn of it; returns `e` to be thrown.
   */
  #broke(e: unknown): unknown {
    if (this.#broken) return e;
    this.#broken = e instanceof Error ? e : new Error(String(e));
    const error = e instanceof CommError
      ? e
      : new CommError(`${this.#broken.name}: ${this.#broken.message}`, { failedRank: this.rank });
    this.#transport.abort(error);
    return e;
  }

  #pick<C extends CollectiveName>(
    collective: C,
    algorithm: string | undefined,
    bytes: number,
  ): typeof ALGORITHMS[C][string] {
    const name = algorithm === undefined || algorithm === "auto"
      ? autoAlgorithm(collective, this.transport, bytes, this.size)
      : algorithm;
    const table = ALGORITHMS[collective] as Record<string, typeof ALGORITHMS[C][string]>;
    const picked = table[name];
    if (!picked || !this.#offers.includes(picked.needs)) {
      throw new RangeError(
        `Unknown ${collective} algorithm ${name} for transport ${this.transport}: expected auto, ` +
          algorithmsFor(collective, this.transport).join(", "),
      );
    }
    return picked;
  }

  #checkOpen(): void {
    if (this.#broken) throw this.#broken;
    if (this.#closed) throw new CommError(`Communicator of rank ${this.rank} is closed`);
  }

  #check(buf: BufferLike): CommBuffer {
    this.#checkOpen();
    const cb = asCommBuffer(buf);
    checkCount(cb.length, cb.dtype, "use");
    if (!TRANSPORTS[this.transport].memory.includes(cb.memory)) {
      throw new TypeError(
        `Transport ${this.transport} cannot carry ${cb.memory} memory: it carries ` +
          `${TRANSPORTS[this.transport].memory.join(", ")}`,
      );
    }
    return cb;
  }

  /** `cb` as a host buffer, which every algorithm so far works on. */
  #host(cb: CommBuffer): HostBuffer {
    if (cb instanceof HostBuffer) return cb;
    throw new TypeError(`Transport ${this.transport} cannot carry ${cb.memory} memory here`);
  }

  /** The checked `out` buffer for `input`, or `input` itself when there is none. */
  #output(input: TypedArray, out: BufferLike | undefined, what: string): TypedArray {
    if (out === undefined) return input;
    const output = this.#host(this.#check(out)).view;
    this.#checkPair(input, output, output.length === input.length, what, "out = input length");
    return output;
  }

  #checkPair(a: TypedArray, b: TypedArray, ok: boolean, what: string, rule: string): void {
    if (dtypeOf(a) !== dtypeOf(b)) {
      throw new TypeError(`Cannot ${what} ${dtypeOf(a)} into ${dtypeOf(b)}: dtypes must match`);
    }
    if (!ok) {
      throw new RangeError(
        `Cannot ${what} ${a.length} into ${b.length} elements on ${this.size} ranks: need ${rule}`,
      );
    }
  }

  #checkRoot(root: number, verb: string): number {
    if (!Number.isInteger(root) || root < 0 || root >= this.size) {
      throw new RangeError(`Cannot ${verb} root ${root}: communicator size is ${this.size}`);
    }
    return root;
  }

  #checkPeer(peer: number, verb: string): void {
    if (!Number.isInteger(peer) || peer < 0 || peer >= this.size || peer === this.rank) {
      throw new RangeError(
        `Cannot ${verb} rank ${peer}: peers are 0 … ${this.size - 1} other than ${this.rank}`,
      );
    }
  }

  #checkTag(tag: number): number {
    if (!Number.isInteger(tag) || tag < 0 || tag >= MAX_TAG) {
      throw new RangeError(`Invalid tag ${tag}: tags are integers 0 … ${MAX_TAG - 1}`);
    }
    return tag;
  }
}

function checkCount(count: number, dtype: Dtype, verb: string): void {
  const limit = MAX_BYTES / DTYPE_INFO[dtype].bytes;
  if (!Number.isInteger(count) || count < 0 || count > limit) {
    throw new RangeError(`Cannot ${verb} ${count} × ${dtype}: counts are integers 0 … ${limit}`);
  }
}

function checkOp(op: ReduceOp): ReduceOp {
  if (!REDUCE_OPS.includes(op)) {
    throw new TypeError(`Unknown reduce op ${op}: expected one of ${REDUCE_OPS.join(", ")}`);
  }
  return op;
}

function kernelOp(op: ReduceOp): KernelOp {
  return op === "avg" ? "sum" : op;
}

const BARRIER_STAMP = callStamp("barrier", "f32", 0, "sum", 0, 0);

/** Stamps of point-to-point messages: only the dtype is checked (lengths are, by the transport). */
const P2P_STAMPS = Object.fromEntries(
  DTYPES.map((dtype) => [dtype, callStamp("p2p", dtype, 0, "sum", 0, 0)]),
) as Record<Dtype, number>;
