/**
 * The Communicator: one rank's handle on a group of ranks. It validates arguments, picks an
 * algorithm from the registry, and runs it over the transport. Any number of calls may be in
 * flight: each runs on a context of its own, and calls begin in the order this rank issued them
 * (primitives/issue_order.ts), which is how peers match them.
 * @module
 */

import { copy } from "../kernels/copy.ts";
import { divide } from "../kernels/reduce.ts";
import { CallBook, MAX_TAG } from "./call_book.ts";
import { barrierDissemination } from "./collectives/barrier_dissemination.ts";
import { CollectiveContext, type Completion, type Operand } from "./collectives/context.ts";
import { CommError, failureNotice, MismatchError, PeerFailedError } from "./errors.ts";
import { IssueOrder } from "./issue_order.ts";
import { type BufferLike, CommBuffer, HostBuffer, ownerOf } from "./memory/comm_buffer.ts";
import { GpuBuffer } from "./memory/gpu.ts";
import type { GpuDevice } from "./memory/gpu_device.ts";
import { ManagedBuffer, type MigrationCount } from "./memory/managed.ts";
import type { RankHeap } from "./memory/heap.ts";
import type { RankMemory } from "./memory/rank_memory.ts";
import {
  type Algorithm,
  type AlgorithmNeed,
  ALGORITHMS,
  algorithmsFor,
  autoAlgorithm,
  type CollectiveName,
  sideFor,
  sideOf,
  type TransportName,
  TRANSPORTS,
} from "./registry.ts";
import { type CallKind, callStamp } from "./stamp.ts";
import { bytesOf, type Transport } from "./transports/transport.ts";
import {
  DONE,
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
  type Side,
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

/** The collectives whose last call is kept (those small messages run in loops). */
type RepeatedKind = "bcast" | "allreduce" | "reduce";
/** The options a kept call is compared on. */
type RepeatOptions = ReduceOptions & RootOptions;

/**
 * A checked collective call: its stamp, its algorithm over its operands (input and output, or a
 * bcast's one buffer), and what it does on one rank and after the algorithm.
 */
interface Call {
  stamp: number;
  /** Runs the algorithm on the operands (more than one rank). */
  run(ctx: CollectiveContext, a: Operand, b: Operand): Completion;
  /** What the call does on one rank instead. */
  alone?(a: Operand, b: Operand): void;
  /** After the algorithm, on this rank (avg's division). */
  after?(a: Operand, b: Operand): void;
}

/** A call's operands, resolved. */
type Operands = [Operand, Operand];

/**
 * A checked call on host buffers, kept so that a call with the same arguments (a loop of small
 * collectives) skips the checks, the algorithm choice and the stamp: about half of a 1-float
 * call's JS time. Device and managed buffers resolve per call and are never kept.
 */
interface KeptCall {
  buf: BufferLike;
  /** The buffer's length then (a view over a resizable buffer can change length). */
  length: number;
  out?: BufferLike;
  op?: ReduceOp;
  root?: number;
  algorithm?: string;
  call: Call;
  ops: Operands;
}

/**
 * One rank's view of a group of `size` ranks.
 *
 * Calls may overlap (`Promise.all([comm.allreduce(a), comm.bcast(b)])`), as NCCL calls on one
 * stream or MPI's nonblocking collectives: ranks match collectives in the order each issued them,
 * so every rank must issue the same collectives in the same order; point-to-point messages keep
 * their order per peer and tag.
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
  #calls: CallBook;
  #offers: readonly AlgorithmNeed[];
  /** Collectives that run on after their call returns finish before the next begins. */
  #blocking: boolean;
  #seq = 0;
  #closed = false;
  /**
   * The context the next call runs on. A call that goes on after it returns keeps its context
   * until it finishes, and this one is replaced (each call in flight has a context of its own).
   */
  #ctx: CollectiveContext;
  /** Contexts of calls that went on after they returned and have finished, for reuse. */
  #idle: CollectiveContext[] = [];
  /** The order collectives begin in (one key), and sends and receives (keyed by tag). */
  #collectives = new IssueOrder((waiting) => {
    this.#direct = !waiting && !this.#broken && !this.#closed;
  });
  #sends = new IssueOrder();
  #recvs = new IssueOrder();
  /**
   * Downloads of device buffers being sent over a host transport. A staged receive waits for
   * them before it may block: on `shm` a receive blocks the thread, and a download needs the
   * event loop.
   */
  #stagedReads = new Set<Promise<void>>();
  /** Host areas of staged device messages, free for reuse. */
  #stagingFree: TypedArray[] = [];
  /** The failure that broke this communicator: every later call throws it. */
  #broken?: Error;
  /**
   * A kept call may begin at once: the communicator is open and no collective waits to begin (one
   * field, read by every call of a loop of small collectives).
   */
  #direct = true;
  /** The last checked call of each small-message collective (see {@linkcode #repeat}). */
  #kept: Partial<Record<RepeatedKind, KeptCall>> = {};

  /** Wraps a connected transport and this rank's memory. Launchers call this; users get one. */
  constructor(transport: Transport, memory: RankMemory) {
    this.rank = transport.rank;
    this.size = transport.size;
    this.#transport = transport;
    this.#memory = memory;
    memory.rank ??= transport.rank;
    this.#calls = new CallBook(transport.rank);
    this.#ctx = new CollectiveContext(transport, memory.heap);
    this.#offers = TRANSPORTS[this.transport].offers;
    this.#blocking = TRANSPORTS[this.transport].blocking;
    transport.calls = this.#calls;
  }

  /** Name of the transport underneath. */
  get transport(): TransportName {
    return this.#transport.name as TransportName;
  }

  /**
   * Allocates a zero-filled buffer of `count` elements of the memory kind asked for, which the
   * transport must carry; host kinds come back as a `HostBuffer` with a `view`.
   */
  alloc(count: number, options?: AllocOptions & { memory?: "host" | "shared" }): HostBuffer;
  /** Allocates a buffer of any memory kind the transport carries. */
  alloc(count: number, options: AllocOptions): CommBuffer;
  alloc(count: number, options: AllocOptions = {}): CommBuffer {
    this.#checkOpen();
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
  send(buf: BufferLike, peer: number, options: TagOptions = {}): Promise<void> {
    try {
      const cb = this.#check(buf, "send");
      this.#checkPeer(peer, "send to");
      const tag = this.#checkTag(options.tag ?? 0);
      const stamp = P2P_STAMPS[cb.dtype];
      const side = this.#side(cb);
      const device = side === "device" ? this.#transport.device : undefined;
      if (side === "host" && cb instanceof HostBuffer && this.#sends.free(tag)) {
        return this.#p2p(this.#transport.send(peer, bytesOf(cb.view), tag, stamp));
      }
      return this.#inTurn(this.#sends, tag, async () => {
        if (device) {
          return device.send(peer, await this.#resolve(cb, side, false) as GpuBuffer, tag, stamp);
        }
        if (side === "host") {
          const view = await this.#resolve(cb, side, false) as TypedArray;
          return this.#transport.send(peer, bytesOf(view), tag, stamp);
        }
        // A device buffer over a host transport: through host memory, as without CUDA-aware
        // MPI. The send is posted once the download is in.
        const host = this.#stagingBuffer(cb);
        const read = cb.read(host);
        this.#stagedReads.add(read);
        try {
          await read;
        } finally {
          this.#stagedReads.delete(read);
        }
        return this.#transport.send(peer, bytesOf(host), tag, stamp)
          .finally(() => this.#stagingFree.push(host));
      });
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Receives the next message from `peer` with the tag into `buf` (lengths and dtypes must
   * match); `"any"` takes the first message of the tag from any other rank (MPI_ANY_SOURCE,
   * torch.distributed's `src=None`). Resolves with the sender's rank.
   */
  recv(buf: BufferLike, peer: number | "any", options: TagOptions = {}): Promise<number> {
    try {
      const cb = this.#check(buf, "receive into");
      if (peer !== "any") this.#checkPeer(peer, "receive from");
      else if (this.size === 1) {
        throw new RangeError("Cannot receive from any rank: this rank is the only one");
      }
      const tag = this.#checkTag(options.tag ?? 0);
      const side = this.#side(cb);
      const device = side === "device" ? this.#transport.device : undefined;
      const check = (stamp: number, from: number) => this.#checkP2P(cb.dtype, stamp, from, tag);
      if (peer !== "any" && side === "host" && cb instanceof HostBuffer && this.#recvs.free(tag)) {
        const from = peer;
        return this.#p2p(
          this.#transport.recv(from, bytesOf(cb.view), tag).then((stamp) => check(stamp, from)),
        );
      }
      return this.#inTurn(this.#recvs, tag, async () => {
        let from: number;
        if (peer === "any") {
          const others = Array.from({ length: this.size - 1 }, (_, i) => i < this.rank ? i : i + 1);
          from = await (device ?? this.#transport).probe(others, tag);
        } else from = peer;
        if (device) {
          const into = await this.#resolve(cb, side, true) as GpuBuffer;
          return device.recv(from, into, tag).then((stamp) => check(stamp, from));
        }
        if (side === "host") {
          const view = await this.#resolve(cb, side, true) as TypedArray;
          return this.#transport.recv(from, bytesOf(view), tag).then((stamp) => check(stamp, from));
        }
        // Sends of this moment (a sendrecv's) download first (see #stagedReads).
        await null;
        await Promise.all(this.#stagedReads);
        const host = this.#stagingBuffer(cb);
        return this.#transport.recv(from, bytesOf(host), tag)
          .then(async (stamp) => {
            await cb.write(host);
            return check(stamp, from);
          })
          .finally(() => this.#stagingFree.push(host));
      });
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** Copies `buf` on `root` into `buf` on every rank. */
  bcast(buf: BufferLike, options: RootOptions & AlgorithmOptions = {}): Promise<void> {
    return this.#repeat("bcast", buf, options) ?? this.#bcast(buf, options);
  }

  #bcast(buf: BufferLike, options: RootOptions & AlgorithmOptions): Promise<void> {
    try {
      const cb = this.#check(buf, "broadcast");
      const root = this.#checkRoot(options.root ?? 0, "broadcast from");
      const side = this.#side(cb);
      const a = this.#pick("bcast", options.algorithm, bytesIn(cb), side);
      const call: Call = {
        stamp: this.#stamp("bcast", cb, "sum", root, a),
        run: (ctx, b) => a.run(ctx, b, root),
      };
      return this.#collective(call, [[cb, this.rank !== root]], side, "bcast", buf, options);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** Reduces every rank's `buf` into `buf` (or `out`) on every rank. */
  allreduce(buf: BufferLike, options: ReduceOptions = {}): Promise<void> {
    return this.#repeat("allreduce", buf, options) ?? this.#allreduce(buf, options);
  }

  #allreduce(buf: BufferLike, options: ReduceOptions): Promise<void> {
    try {
      const input = this.#check(buf, "allreduce");
      const output = this.#output(input, options.out, "allreduce");
      const op = checkOp(options.op ?? "sum");
      const side = this.#side(input, output);
      const a = this.#pick("allreduce", options.algorithm, bytesIn(input), side);
      const kop = kernelOp(op);
      const call: Call = {
        stamp: this.#stamp("allreduce", input, op, 0, a),
        run: (ctx, i, o) => a.run(ctx, i, o, kop),
        alone: copyOperand,
        after: op === "avg" ? (_, o) => divideOperand(o, this.size) : undefined,
      };
      return this.#collective(
        call,
        [[input, false], [output, true]],
        side,
        "allreduce",
        buf,
        options,
      );
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** Reduces every rank's `buf` into `buf` (or `out`) on `root`; other ranks' buffers are unchanged. */
  reduce(buf: BufferLike, options: ReduceOptions & RootOptions = {}): Promise<void> {
    return this.#repeat("reduce", buf, options) ?? this.#reduce(buf, options);
  }

  #reduce(buf: BufferLike, options: ReduceOptions & RootOptions): Promise<void> {
    try {
      const root = this.#checkRoot(options.root ?? 0, "reduce to");
      const input = this.#check(buf, "reduce");
      const isRoot = this.rank === root;
      const target = isRoot ? this.#output(input, options.out, "reduce") : input;
      const op = checkOp(options.op ?? "sum");
      const side = this.#side(input, target);
      const a = this.#pick("reduce", options.algorithm, bytesIn(input), side);
      const kop = kernelOp(op);
      const call: Call = {
        stamp: this.#stamp("reduce", input, op, root, a),
        run: (ctx, i, o) => a.run(ctx, i, o, kop, root),
        alone: copyOperand,
        after: op === "avg" && isRoot ? (_, o) => divideOperand(o, this.size) : undefined,
      };
      return this.#collective(
        call,
        [[input, false], [target, isRoot]],
        side,
        "reduce",
        buf,
        options,
      );
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** Gathers every rank's `send` (n elements) into `recv` (size × n), in rank order. */
  allgather(send: BufferLike, recv: BufferLike, options: AlgorithmOptions = {}): Promise<void> {
    try {
      const s = this.#check(send, "allgather"), r = this.#check(recv, "allgather into");
      this.#checkPair(s, r, r.length === s.length * this.size, "allgather", "recv = size × send");
      const side = this.#side(s, r);
      const a = this.#pick("allgather", options.algorithm, bytesIn(r), side);
      const call: Call = {
        stamp: this.#stamp("allgather", s, "sum", 0, a),
        run: (ctx, so, ro) => a.run(ctx, so, ro),
        alone: copyOperand,
      };
      return this.#collective(call, [[s, false], [r, true]], side);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** Reduces every rank's `send` (size × n) and leaves block `rank` of the result in `recv` (n). */
  reduceScatter(
    send: BufferLike,
    recv: BufferLike,
    options: Omit<ReduceOptions, "out"> = {},
  ): Promise<void> {
    try {
      const s = this.#check(send, "reduceScatter"), r = this.#check(recv, "reduceScatter into");
      this.#checkPair(
        s,
        r,
        s.length === r.length * this.size,
        "reduceScatter",
        "send = size × recv",
      );
      const op = checkOp(options.op ?? "sum");
      const side = this.#side(s, r);
      const a = this.#pick("reduceScatter", options.algorithm, bytesIn(s), side);
      const kop = kernelOp(op);
      const call: Call = {
        stamp: this.#stamp("reduceScatter", r, op, 0, a),
        run: (ctx, so, ro) => a.run(ctx, so, ro, kop),
        alone: copyOperand,
        after: op === "avg" ? (_, ro) => divideOperand(ro, this.size) : undefined,
      };
      return this.#collective(call, [[s, false], [r, true]], side);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** Resolves once every rank has called `barrier`. */
  barrier(): Promise<void> {
    try {
      this.#checkOpen();
      const { shared, device } = this.#transport;
      const call: Call = {
        stamp: BARRIER_STAMP,
        run: (ctx) => {
          if (shared) return shared.barrier(ctx.stamp);
          if (device) return device.join(ctx.stamp, null, () => {});
          return barrierDissemination(ctx);
        },
      };
      return this.#collective(call, [], "host");
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Waits until this rank's device has finished everything enqueued so far (like
   * `cudaStreamSynchronize` after NCCL calls): calls on device buffers return once their work is
   * recorded. Resolves at once on ranks without a device.
   */
  async synchronize(): Promise<void> {
    this.#checkOpen();
    try {
      await this.#memory.gpu?.synchronize();
    } catch (e) {
      throw this.#broke(e);
    }
  }

  /**
   * This rank's heap: the shared WebAssembly memory behind its `shared` buffers, for kernels of
   * the program's own that work on them in place.
   */
  get heap(): RankHeap {
    return this.#memory.heap;
  }

  /** This rank's WebGPU device, when it has one (see `SpawnOptions.gpu`). */
  get gpu(): GpuDevice | undefined {
    return this.#memory.gpu;
  }

  /** Migrations of this rank's managed buffers so far. */
  get migrations(): Readonly<MigrationCount> {
    return this.#memory.migrations;
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

  /**
   * The algorithm `auto` picks for a collective on a buffer of `bytes` of `memory` (for
   * reports).
   */
  autoAlgorithm(collective: CollectiveName, bytes: number, memory: MemoryKind = "host"): string {
    const side = sideFor(this.transport, memory);
    return autoAlgorithm(collective, this.transport, bytes, this.size, side);
  }

  /**
   * Closes the communicator: says goodbye to every peer, with a digest of this rank's calls, and
   * waits (up to the timeout) for theirs. Rejects with a `MismatchError` when the ranks' calls
   * differed, or a message a peer sent was never received, and with any failure that reached
   * this rank after its last call; later calls throw. Work enqueued on the device still runs.
   */
  async [Symbol.asyncDispose](): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#direct = false;
    this.#memory.gpu?.flush();
    try {
      await this.#transport.close();
    } catch (e) {
      // A failure this rank's calls already reported is not news.
      if (!this.#broken) throw this.#broke(e);
    }
  }

  /**
   * Runs the kept call of `kind` again if this one repeats it: the same buffer (of the same length)
   * and the same `out`, `op`, `root` and `algorithm`. Otherwise `undefined`.
   */
  #repeat(kind: RepeatedKind, buf: BufferLike, o: RepeatOptions): Promise<void> | undefined {
    const r = this.#kept[kind];
    if (
      r === undefined || r.buf !== buf || r.length !== buf.length || r.out !== o.out ||
      r.op !== o.op || r.root !== o.root || r.algorithm !== o.algorithm
    ) return undefined;
    return this.#rerun(r);
  }

  /**
   * Runs a kept call again: {@linkcode #now} without its one-rank and `after` cases, which kept
   * calls never have (every call of a loop of small collectives comes this way).
   */
  #rerun(r: KeptCall): Promise<void> {
    if (!this.#direct) return this.#later(r.call, () => r.ops);
    try {
      const ctx = this.#begin(r.call.stamp);
      const pending = r.call.run(ctx, r.ops[0], r.ops[1]);
      if (!pending) return DONE;
      const done = this.#finishing(pending, ctx);
      if (this.#blocking) this.#collectives.holdUntil(done);
      return done;
    } catch (e) {
      return Promise.reject(this.#broke(e));
    }
  }

  /**
   * Runs a checked collective as the next call in issue order, on the operands of `buffers` (each
   * with whether the call writes it) on `side`; a call on host buffers is kept for
   * {@linkcode #repeat} under `kind`.
   */
  #collective(
    call: Call,
    buffers: [CommBuffer, boolean][],
    side: Side,
    kind?: RepeatedKind,
    buf?: BufferLike,
    options?: RepeatOptions,
  ): Promise<void> {
    if (this.size === 1 && !call.alone && !call.after) return DONE;
    if (!buffers.every(([b]) => b instanceof HostBuffer)) {
      return this.#later(call, () => this.#operands(buffers, side));
    }
    const ops = buffers.map(([b]) => (b as HostBuffer).view) as Operands;
    if (kind && this.size > 1 && !call.after) {
      const { out, op, root, algorithm } = options!;
      this.#kept[kind] = { buf: buf!, length: buf!.length, out, op, root, algorithm, call, ops };
    }
    return this.#collectives.free() ? this.#now(call, ops) : this.#later(call, () => ops);
  }

  /**
   * Begins `call` now, on a context of its own: not `async`, so a call that completes at once
   * allocates no promise. On a blocking transport, the next collective waits for it to finish.
   */
  #now(call: Call, ops: Operands): Promise<void> {
    const done = this.#start(call, ops);
    if (this.#blocking && done !== DONE) this.#collectives.holdUntil(done);
    return done;
  }

  /** Begins `call` once the calls issued before it have (see {@linkcode #now}). */
  async #later(call: Call, operands: () => Operands | Promise<Operands>): Promise<void> {
    const turn = this.#collectives.claim();
    let done: Promise<void>;
    try {
      await turn.ready;
      this.#checkOpen();
      done = this.#start(call, await operands());
    } catch (e) {
      turn.release();
      throw this.#broke(e);
    }
    if (this.#blocking) done.then(turn.release, turn.release);
    else turn.release();
    return done;
  }

  /** Runs `call` on `ops` now: on one rank without a context, else on a context of its own. */
  #start(call: Call, ops: Operands): Promise<void> {
    const a = ops[0], b = ops[1];
    try {
      if (this.size === 1) {
        call.alone?.(a, b);
        call.after?.(a, b);
        return DONE;
      }
      const ctx = this.#begin(call.stamp);
      const pending = call.run(ctx, a, b);
      if (!pending) {
        call.after?.(a, b);
        return DONE;
      }
      return this.#finishing(pending, ctx, () => call.after?.(a, b));
    } catch (e) {
      return Promise.reject(this.#broke(e));
    }
  }

  /**
   * A call's algorithm still `pending` on `ctx`, which it keeps until it finishes (the next call
   * gets another); then `after`, or the communicator breaks.
   */
  #finishing(pending: Promise<void>, ctx: CollectiveContext, after?: () => void): Promise<void> {
    this.#ctx = this.#idle.pop() ?? new CollectiveContext(this.#transport, this.#memory.heap);
    const seq = this.#seq;
    return pending.then(() => {
      // No call began meanwhile (calls one at a time): this context, whose scratch is warm,
      // serves the next call again.
      if (this.#seq === seq) [this.#ctx, ctx] = [ctx, this.#ctx];
      this.#idle.push(ctx);
      after?.();
    }, (e) => {
      throw this.#broke(e);
    });
  }

  /**
   * Begins one collective call on more than one rank: a context with the next tag and the call's
   * stamp (judging peers' data that arrived early).
   */
  #begin(stamp: number): CollectiveContext {
    const ctx = this.#ctx;
    ctx.tag = MAX_TAG + (this.#seq++ % MAX_TAG);
    ctx.stamp = stamp;
    this.#calls.begin(ctx.tag, stamp);
    return ctx;
  }

  /**
   * Runs `post` (which posts a send or receive) once the calls with `tag` issued before it in
   * `order` have posted theirs.
   */
  async #inTurn<T>(order: IssueOrder, tag: number, post: () => Promise<T>): Promise<T> {
    const turn = order.claim(tag);
    let posted: Promise<T>;
    try {
      await turn.ready;
      this.#checkOpen();
      posted = post();
    } catch (e) {
      turn.release();
      throw this.#broke(e);
    }
    turn.release();
    return await this.#p2p(posted);
  }

  /** A point-to-point operation whose failure breaks the communicator. */
  #p2p<T>(op: Promise<T>): Promise<T> {
    return op.catch((e) => {
      throw this.#broke(e);
    });
  }

  /** The sender of a point-to-point message whose `stamp` says its dtype matches `dtype`. */
  #checkP2P(dtype: Dtype, stamp: number, peer: number, tag: number): number {
    if (stamp === P2P_STAMPS[dtype]) return peer;
    throw new MismatchError(
      `Rank ${this.rank} received ${this.#calls.describe(stamp)} from rank ${peer} (tag ` +
        `${tag}) into ${dtype}: sender and receiver must use the same dtype`,
      { failedRank: peer },
    );
  }

  /**
   * Marks the communicator broken by `e` and aborts the transport, so in-flight operations stop
   * and peers learn of it; returns `e` to be thrown.
   */
  #broke(e: unknown): unknown {
    if (this.#broken) return e;
    this.#broken = e instanceof Error ? e : new Error(String(e));
    this.#direct = false;
    const error = e instanceof CommError
      ? e
      : new CommError(`${this.#broken.name}: ${this.#broken.message}`, { failedRank: this.rank });
    this.#transport.abort(error);
    return e;
  }

  #stamp(kind: CallKind, buf: CommBuffer, op: ReduceOp, root: number, a: Algorithm<unknown>) {
    return callStamp(kind, buf.dtype, buf.length, op, root, a.index);
  }

  #pick<C extends CollectiveName>(
    collective: C,
    algorithm: string | undefined,
    bytes: number,
    side: Side,
  ): typeof ALGORITHMS[C][string] {
    const name = algorithm === undefined || algorithm === "auto"
      ? autoAlgorithm(collective, this.transport, bytes, this.size, side)
      : algorithm;
    const table = ALGORITHMS[collective] as Record<string, typeof ALGORITHMS[C][string]>;
    const picked = Object.hasOwn(table, name) ? table[name] : undefined;
    if (!picked || !this.#offers.includes(picked.needs) || sideOf(picked.needs) !== side) {
      throw new RangeError(
        `Unknown ${collective} algorithm ${name} for transport ${this.transport} with ` +
          `${side} buffers: expected auto, ${
            algorithmsFor(collective, this.transport, side).join(", ")
          }`,
      );
    }
    return picked;
  }

  /** The side every buffer of a call is used on; they must agree. */
  #side(first: CommBuffer, ...rest: CommBuffer[]): Side {
    const side = sideFor(this.transport, first.memory);
    for (const b of rest) {
      if (sideFor(this.transport, b.memory) !== side) {
        throw new TypeError(
          `Cannot mix ${first.memory} and ${b.memory} memory in one call on transport ` +
            `${this.transport}: one is used on the device, the other on the host`,
        );
      }
    }
    return side;
  }

  /**
   * The operands of `buffers` on `side`; a buffer given twice (in place) resolves once, written if
   * either use writes it (see {@linkcode #resolve}).
   */
  async #operands(buffers: [CommBuffer, boolean][], side: Side): Promise<Operands> {
    const ops = [] as unknown as Operands;
    for (let i = 0; i < buffers.length; i++) {
      const buf = buffers[i][0];
      const first = buffers.findIndex(([b]) => b === buf);
      const write = buffers.some(([b, w]) => b === buf && w);
      ops.push(first < i ? ops[first] : await this.#resolve(buf, side, write));
    }
    return ops;
  }

  /**
   * What an algorithm on `side` works on for `buf`: its host view, or its device buffer; a
   * managed buffer migrates there first (and, when `write`, its other side's copy goes stale).
   */
  async #resolve(buf: CommBuffer, side: Side, write: boolean): Promise<TypedArray | GpuBuffer> {
    if (buf instanceof HostBuffer) return buf.view;
    if (buf instanceof GpuBuffer) return buf;
    if (buf instanceof ManagedBuffer) {
      return side === "host"
        ? (await buf.acquire("host", write)).view
        : await buf.acquire("device", write);
    }
    throw new TypeError(`Unknown buffer kind ${buf.memory}`);
  }

  /**
   * A host area in the heap for a device buffer sent or received over a host transport: a free
   * one large enough, or a new one (each in-flight message has its own).
   */
  #stagingBuffer(buf: CommBuffer): TypedArray {
    const bytes = bytesIn(buf);
    const i = this.#stagingFree.findIndex((h) => h.byteLength >= bytes && dtypeOf(h) === buf.dtype);
    const host = i >= 0
      ? this.#stagingFree.splice(i, 1)[0]
      : this.#memory.heap.alloc(buf.dtype, buf.length);
    return host.subarray(0, buf.length) as TypedArray;
  }

  #checkOpen(): void {
    if (this.#broken) throw this.#broken;
    if (this.#closed) throw new CommError(`Communicator of rank ${this.rank} is closed`);
  }

  /** `buf` as a buffer this rank may use in a call that does `what`. */
  #check(buf: BufferLike, what: string): CommBuffer {
    this.#checkOpen();
    const cb = commBufferOf(buf, what);
    const owner = ownerOf(cb);
    if (owner !== undefined && owner !== this.#memory) {
      const theirs = owner.rank === this.rank
        ? "another communicator of this rank"
        : `rank ${owner.rank}`;
      throw new TypeError(
        `Rank ${this.rank} cannot ${what} a buffer allocated by ${theirs}: a buffer belongs to ` +
          `the communicator that allocated it`,
      );
    }
    checkCount(cb.length, cb.dtype, "use");
    if (!TRANSPORTS[this.transport].memory.includes(cb.memory)) {
      throw new TypeError(
        `Transport ${this.transport} cannot carry ${cb.memory} memory: it carries ` +
          `${TRANSPORTS[this.transport].memory.join(", ")}`,
      );
    }
    return cb;
  }

  /** The checked `out` buffer for `input`, or `input` itself when there is none. */
  #output(input: CommBuffer, out: BufferLike | undefined, what: string): CommBuffer {
    if (out === undefined) return input;
    const output = this.#check(out, `${what} into`);
    this.#checkPair(input, output, output.length === input.length, what, "out = input length");
    return output;
  }

  #checkPair(a: CommBuffer, b: CommBuffer, ok: boolean, what: string, rule: string): void {
    if (a.dtype !== b.dtype) {
      throw new TypeError(`Cannot ${what} ${a.dtype} into ${b.dtype}: dtypes must match`);
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

/**
 * The CommBuffer of a buffer-like argument of a call that does `what`; a one-line TypeError for
 * anything else, and for a typed array whose memory was transferred away.
 */
function commBufferOf(buf: BufferLike, what: string): CommBuffer {
  let cb: CommBuffer;
  if (buf instanceof CommBuffer) cb = buf;
  else if (ArrayBuffer.isView(buf)) cb = new HostBuffer(buf);
  else {
    const got = buf === null
      ? "null"
      : typeof buf === "object"
      ? `a ${(buf as object).constructor?.name ?? "plain object"}`
      : typeof buf;
    throw new TypeError(
      `Cannot ${what} ${got}: expected a CommBuffer (comm.alloc) or a Float32Array, ` +
        `Float64Array or Int32Array`,
    );
  }
  if (cb instanceof HostBuffer && (cb.view.buffer as ArrayBuffer).detached) {
    throw new TypeError(
      `Cannot ${what} a buffer whose memory was transferred (its ArrayBuffer is detached)`,
    );
  }
  return cb;
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

/** Bytes of a buffer (what `auto` decides by). */
function bytesIn(buf: CommBuffer): number {
  return buf.length * DTYPE_INFO[buf.dtype].bytes;
}

/** Copies `src` into `dst`: host views at once, device buffers by a recorded copy. */
function copyOperand(src: Operand, dst: Operand): void {
  if (src === dst) return;
  if (src instanceof GpuBuffer) {
    return src.gpu.kernels.copy(src.gpu.encoder(), src, dst as GpuBuffer);
  }
  copy(dst as TypedArray, src as TypedArray);
}

/** `buf /= k` (`avg`): host views at once, device buffers by a recorded kernel. */
function divideOperand(buf: Operand, k: number): void {
  if (buf instanceof GpuBuffer) return buf.gpu.kernels.scale(buf.gpu.encoder(), buf, k);
  divide(buf as TypedArray, k);
}

const BARRIER_STAMP = callStamp("barrier", "f32", 0, "sum", 0, 0);

/** Stamps of point-to-point messages: only the dtype is checked (lengths are, by the transport). */
const P2P_STAMPS = Object.fromEntries(
  DTYPES.map((dtype) => [dtype, callStamp("p2p", dtype, 0, "sum", 0, 0)]),
) as Record<Dtype, number>;
