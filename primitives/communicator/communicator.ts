/**
 * The Communicator: one rank's handle on a group of ranks. It checks arguments
 * (call_arguments.ts), picks an algorithm from the registry, and runs it over the transport
 * (collective_runner.ts; point_to_point.ts for messages). Any number of calls may be in flight:
 * each runs on a context of its own, and calls begin in the order this rank issued them
 * (issue_order.ts), which is how peers match them.
 * @module
 */

import { bytesIn, CallArguments, IN_PLACE, kernelOp } from "./call_arguments.ts";
import { CallBook, MAX_TAG } from "./call_book.ts";
import { type Call, CollectiveRunner, type Keep, type RunnerHooks } from "./collective_runner.ts";
import { barrierDissemination } from "../collectives/barrier_dissemination.ts";
import { CommError, failureNotice, PeerFailedError } from "../errors.ts";
import type { BufferLike, CommBuffer, HostBuffer } from "../memory/comm_buffer.ts";
import type { GpuDevice } from "../memory/gpu_device.ts";
import type { MigrationCount } from "../memory/managed.ts";
import type { RankHeap } from "../memory/heap.ts";
import type { RankMemory } from "../memory/rank_memory.ts";
import { copyOperand, divideOperand } from "./operands.ts";
import { PointToPoint } from "./point_to_point.ts";
import {
  type Algorithm,
  type CollectiveName,
  pickAlgorithm,
  sideOfMemory,
  type TransportName,
  TRANSPORTS,
} from "../registry.ts";
import { type CallKind, callStamp } from "./stamp.ts";
import type { LinkCosts } from "../cost_model.ts";
import type { Transport } from "../transports/transport.ts";
import type { Dtype, MemoryKind, ReduceOp, Side } from "../types.ts";

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
  readonly #transport: Transport;
  readonly #memory: RankMemory;
  readonly #args: CallArguments;
  readonly #runner: CollectiveRunner;
  readonly #p2p: PointToPoint;
  /** Ranks per process of a hierarchical group (1: one level). */
  readonly #threads: number;
  #closed = false;
  /** The failure that broke this communicator: every later call throws it. */
  #broken?: Error;

  /** Wraps a connected transport and this rank's memory. Launchers call this; users get one. */
  constructor(transport: Transport, memory: RankMemory) {
    this.rank = transport.rank;
    this.size = transport.size;
    this.#transport = transport;
    this.#memory = memory;
    memory.rank ??= transport.rank;
    const calls = new CallBook(transport.rank);
    const hooks: RunnerHooks = { checkOpen: () => this.#checkOpen(), broke: (e) => this.#broke(e) };
    this.#args = new CallArguments(this.rank, this.size, memory, this.transport);
    const blocking = transport.blocking ?? TRANSPORTS[this.transport].blocking;
    this.#threads = transport.hierarchy?.threads ?? 1;
    this.#runner = new CollectiveRunner(transport, memory.heap, calls, blocking, hooks);
    this.#p2p = new PointToPoint(transport, memory, calls, hooks);
    transport.calls = calls;
  }

  /** Ranks per process of a hierarchical group (`--threads`); 1 for a one-level group. */
  get threads(): number {
    return this.#threads;
  }

  /**
   * What the links between the group's hosts cost, measured as the group formed (`auto` picks
   * between hosts by them); `undefined` when every rank runs on one machine.
   */
  get links(): LinkCosts | undefined {
    return this.#transport.links;
  }

  /** Name of the transport underneath. */
  get transport(): TransportName {
    return this.#transport.name as TransportName;
  }

  /**
   * Allocates a zero-filled buffer of `count` elements of the memory kind asked for, which the
   * transport must carry; host kinds come back as a `HostBuffer` with a `view`.
   * @throws {RangeError} a count beyond the heap or 2^28 elements
   * @throws {TypeError} a memory kind the transport does not carry
   * @throws {CommError} a closed communicator
   */
  alloc(count: number, options?: AllocOptions & { memory?: "host" | "shared" }): HostBuffer;
  /** Allocates a buffer of any memory kind the transport carries. */
  alloc(count: number, options: AllocOptions): CommBuffer;
  alloc(count: number, options: AllocOptions = {}): CommBuffer {
    this.#checkOpen();
    const dtype = options.dtype ?? "f32";
    const memory = options.memory ?? "shared";
    this.#args.alloc(count, dtype, memory);
    return this.#memory.alloc(memory, dtype, count);
  }

  /** Returns a buffer's memory (optional; for long-running programs). */
  free(buf: CommBuffer): void {
    this.#memory.free(buf);
  }

  /**
   * Sends `buf` to `peer`; resolves when `buf` may be reused.
   * @throws {RangeError} (the promise rejects) a bad root, peer, tag, length, algorithm or overlap
   * @throws {TypeError} a buffer of another communicator, or a bad dtype, op or memory kind
   * @throws {CommError} a peer failed, a call differs between ranks, or the timeout passed
   */
  send(buf: BufferLike, peer: number, options: TagOptions = {}): Promise<void> {
    try {
      const cb = this.#check(buf, "send");
      this.#args.peer(peer, "send to");
      return this.#p2p.send(cb, peer, this.#args.tag(options.tag ?? 0), this.#args.side(cb));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Receives the next message from `peer` with the tag into `buf` (lengths and dtypes must
   * match); `"any"` takes the first message of the tag from any other rank (MPI_ANY_SOURCE,
   * torch.distributed's `src=None`). Resolves with the sender's rank.
   * @throws {RangeError} (the promise rejects) a bad root, peer, tag, length, algorithm or overlap
   * @throws {TypeError} a buffer of another communicator, or a bad dtype, op or memory kind
   * @throws {CommError} a peer failed, a call differs between ranks, or the timeout passed
   */
  recv(buf: BufferLike, peer: number | "any", options: TagOptions = {}): Promise<number> {
    try {
      const cb = this.#check(buf, "receive into");
      if (peer !== "any") this.#args.peer(peer, "receive from");
      else if (this.size === 1) {
        throw new RangeError("Cannot receive from any rank: this rank is the only one");
      }
      return this.#p2p.recv(cb, peer, this.#args.tag(options.tag ?? 0), this.#args.side(cb));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Copies `buf` on `root` into `buf` on every rank.
   * @throws {RangeError} (the promise rejects) a bad root, peer, tag, length, algorithm or overlap
   * @throws {TypeError} a buffer of another communicator, or a bad dtype, op or memory kind
   * @throws {CommError} a peer failed, a call differs between ranks, or the timeout passed
   */
  bcast(buf: BufferLike, options: RootOptions & AlgorithmOptions = {}): Promise<void> {
    return this.#runner.repeat("bcast", buf, options) ?? this.#bcast(buf, options);
  }

  #bcast(buf: BufferLike, options: RootOptions & AlgorithmOptions): Promise<void> {
    try {
      const cb = this.#check(buf, "broadcast");
      const root = this.#args.root(options.root ?? 0, "broadcast from");
      const side = this.#args.side(cb);
      const a = this.#pick("bcast", options.algorithm, bytesIn(cb), side);
      const call: Call = {
        stamp: this.#stamp("bcast", cb, "sum", root, a),
        run: (ctx, b) => a.run(ctx, b, root),
      };
      const keep: Keep = { kind: "bcast", buf, options };
      return this.#runner.run(call, [[cb, this.rank !== root]], side, keep);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Reduces every rank's `buf` into `buf` (or `out`) on every rank.
   * @throws {RangeError} (the promise rejects) a bad root, peer, tag, length, algorithm or overlap
   * @throws {TypeError} a buffer of another communicator, or a bad dtype, op or memory kind
   * @throws {CommError} a peer failed, a call differs between ranks, or the timeout passed
   */
  allreduce(buf: BufferLike, options: ReduceOptions = {}): Promise<void> {
    return this.#runner.repeat("allreduce", buf, options) ?? this.#allreduce(buf, options);
  }

  #allreduce(buf: BufferLike, options: ReduceOptions): Promise<void> {
    try {
      const input = this.#check(buf, "allreduce");
      const output = this.#args.output(input, options.out, "allreduce");
      const op = this.#args.op(options.op ?? "sum");
      const side = this.#args.side(input, output);
      const a = this.#pick("allreduce", options.algorithm, bytesIn(input), side);
      const kop = kernelOp(op);
      const call: Call = {
        stamp: this.#stamp("allreduce", input, op, 0, a),
        run: (ctx, i, o) => a.run(ctx, i, o, kop),
        alone: copyOperand,
        after: op === "avg" ? (_, o) => divideOperand(o, this.size) : undefined,
      };
      const keep: Keep = { kind: "allreduce", buf, options };
      return this.#runner.run(call, [[input, false], [output, true]], side, keep);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Reduces every rank's `buf` into `buf` (or `out`) on `root`; other ranks' buffers are unchanged.
   * @throws {RangeError} (the promise rejects) a bad root, peer, tag, length, algorithm or overlap
   * @throws {TypeError} a buffer of another communicator, or a bad dtype, op or memory kind
   * @throws {CommError} a peer failed, a call differs between ranks, or the timeout passed
   */
  reduce(buf: BufferLike, options: ReduceOptions & RootOptions = {}): Promise<void> {
    return this.#runner.repeat("reduce", buf, options) ?? this.#reduce(buf, options);
  }

  #reduce(buf: BufferLike, options: ReduceOptions & RootOptions): Promise<void> {
    try {
      const root = this.#args.root(options.root ?? 0, "reduce to");
      const input = this.#check(buf, "reduce");
      const isRoot = this.rank === root;
      const target = isRoot ? this.#args.output(input, options.out, "reduce") : input;
      const op = this.#args.op(options.op ?? "sum");
      const side = this.#args.side(input, target);
      const a = this.#pick("reduce", options.algorithm, bytesIn(input), side);
      const kop = kernelOp(op);
      const call: Call = {
        stamp: this.#stamp("reduce", input, op, root, a),
        run: (ctx, i, o) => a.run(ctx, i, o, kop, root),
        alone: copyOperand,
        after: op === "avg" && isRoot ? (_, o) => divideOperand(o, this.size) : undefined,
      };
      const keep: Keep = { kind: "reduce", buf, options };
      return this.#runner.run(call, [[input, false], [target, isRoot]], side, keep);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Gathers every rank's `send` (n elements) into `recv` (size × n), in rank order. In place:
   * `send` is this rank's block of `recv` (`recv.subarray(rank * n, (rank + 1) * n)`).
   * @throws {RangeError} (the promise rejects) a bad root, peer, tag, length, algorithm or overlap
   * @throws {TypeError} a buffer of another communicator, or a bad dtype, op or memory kind
   * @throws {CommError} a peer failed, a call differs between ranks, or the timeout passed
   */
  allgather(send: BufferLike, recv: BufferLike, options: AlgorithmOptions = {}): Promise<void> {
    return this.#blocks("allgather", send, recv, "sum", options.algorithm);
  }

  /**
   * Reduces every rank's `send` (size × n) and leaves block `rank` of the result in `recv` (n).
   * In place: `recv` is this rank's block of `send`.
   * @throws {RangeError} (the promise rejects) a bad root, peer, tag, length, algorithm or overlap
   * @throws {TypeError} a buffer of another communicator, or a bad dtype, op or memory kind
   * @throws {CommError} a peer failed, a call differs between ranks, or the timeout passed
   */
  reduceScatter(
    send: BufferLike,
    recv: BufferLike,
    options: Omit<ReduceOptions, "out"> = {},
  ): Promise<void> {
    return this.#blocks("reduceScatter", send, recv, options.op ?? "sum", options.algorithm);
  }

  /**
   * The collectives between a block per rank (`allgather`'s send, `reduceScatter`'s recv) and
   * `size` blocks (the other buffer).
   */
  #blocks(
    collective: "allgather" | "reduceScatter",
    send: BufferLike,
    recv: BufferLike,
    op: ReduceOp,
    algorithm: string | undefined,
  ): Promise<void> {
    try {
      const s = this.#check(send, collective), r = this.#check(recv, `${collective} into`);
      const gathers = collective === "allgather";
      const [block, all] = gathers ? [s, r] : [r, s];
      const rule = gathers ? "recv = size × send" : "send = size × recv";
      this.#args.pair(s, r, all.length === block.length * this.size, collective, rule);
      this.#args.apart(
        block,
        all,
        collective,
        this.rank,
        IN_PLACE[gathers ? "ownSend" : "ownRecv"],
      );
      this.#args.op(op);
      const side = this.#args.side(s, r);
      const a = this.#pick(collective, algorithm, bytesIn(all), side);
      const kop = kernelOp(op);
      const call: Call = {
        stamp: this.#stamp(collective, block, op, 0, a),
        run: (ctx, so, ro) => a.run(ctx, so, ro, kop),
        alone: copyOperand,
        after: op === "avg" ? (_, ro) => divideOperand(ro, this.size) : undefined,
      };
      return this.#runner.run(call, [[s, false], [r, true]], side);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Sends block j of `send` (size × n elements) to rank j, and receives rank i's block for this
   * rank into block i of `recv` (size × n): MPI_Alltoall, torch.distributed's `all_to_all_single`.
   * The buffers must not overlap.
   * @throws {RangeError} (the promise rejects) a bad root, peer, tag, length, algorithm or overlap
   * @throws {TypeError} a buffer of another communicator, or a bad dtype, op or memory kind
   * @throws {CommError} a peer failed, a call differs between ranks, or the timeout passed
   */
  alltoall(send: BufferLike, recv: BufferLike, options: AlgorithmOptions = {}): Promise<void> {
    try {
      const s = this.#check(send, "alltoall"), r = this.#check(recv, "alltoall into");
      const ok = s.length === r.length && s.length % this.size === 0;
      this.#args.pair(s, r, ok, "alltoall", "send = recv = size × n");
      this.#args.apart(s, r, "alltoall");
      return this.#rooted("alltoall", s, r, 0, s, options.algorithm, [[s, false], [r, true]]);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Gathers every rank's `send` (n elements) into `recv` (size × n) on `root`, in rank order;
   * other ranks pass no `recv` (it is ignored if they do). In place: the root's `send` is its
   * block of `recv`.
   * @throws {RangeError} (the promise rejects) a bad root, peer, tag, length, algorithm or overlap
   * @throws {TypeError} a buffer of another communicator, or a bad dtype, op or memory kind
   * @throws {CommError} a peer failed, a call differs between ranks, or the timeout passed
   */
  gather(
    send: BufferLike,
    recv: BufferLike | undefined,
    options: RootOptions & AlgorithmOptions = {},
  ): Promise<void> {
    return this.#rootBlocks("gather", send, recv, options);
  }

  /**
   * Scatters block r of `send` (size × n elements) on `root` into `recv` (n) on rank r; other
   * ranks pass no `send` (it is ignored if they do). In place: the root's `recv` is its block of
   * `send`.
   * @throws {RangeError} (the promise rejects) a bad root, peer, tag, length, algorithm or overlap
   * @throws {TypeError} a buffer of another communicator, or a bad dtype, op or memory kind
   * @throws {CommError} a peer failed, a call differs between ranks, or the timeout passed
   */
  scatter(
    send: BufferLike | undefined,
    recv: BufferLike,
    options: RootOptions & AlgorithmOptions = {},
  ): Promise<void> {
    return this.#rootBlocks("scatter", recv, send, options);
  }

  /** gather and scatter: `block` (n elements) on every rank, `whole` (size × n) on the root only. */
  #rootBlocks(
    collective: "gather" | "scatter",
    block: BufferLike,
    whole: BufferLike | undefined,
    options: RootOptions & AlgorithmOptions,
  ): Promise<void> {
    try {
      const gathers = collective === "gather";
      const b = this.#check(block, gathers ? "gather" : "scatter into");
      const root = this.#args.root(options.root ?? 0, gathers ? "gather to" : "scatter from");
      if (this.rank !== root) {
        return this.#rooted(collective, b, b, root, b, options.algorithm, [[b, !gathers]]);
      }
      if (whole === undefined) {
        throw new TypeError(
          `Cannot ${gathers ? "gather to" : "scatter from"} root ${root} without ` +
            (gathers ? "recv" : "send"),
        );
      }
      const w = this.#check(whole, gathers ? "gather into" : "scatter");
      const [s, r] = gathers ? [b, w] : [w, b];
      const rule = gathers ? "recv = size × send" : "send = size × recv";
      this.#args.pair(s, r, w.length === b.length * this.size, collective, rule);
      this.#args.apart(b, w, collective, root, IN_PLACE[gathers ? "rootSend" : "rootRecv"]);
      return this.#rooted(collective, s, r, root, b, options.algorithm, [[s, false], [r, true]]);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * alltoall, gather and scatter on operands `send` and `recv` (a gather's other ranks pass
   * `send` twice, a scatter's `recv`), stamped with `block`'s length (equal on every rank).
   */
  #rooted(
    collective: "alltoall" | "gather" | "scatter",
    send: CommBuffer,
    recv: CommBuffer,
    root: number,
    block: CommBuffer,
    algorithm: string | undefined,
    buffers: [CommBuffer, boolean][],
  ): Promise<void> {
    const side = this.#args.side(send, recv);
    const bytes = bytesIn(block) * (collective === "alltoall" ? 1 : this.size);
    const a = this.#pick(collective, algorithm, bytes, side);
    const call: Call = {
      stamp: this.#stamp(collective, block, "sum", root, a),
      run: (ctx, so, ro) => a.run(ctx, so, ro, root),
      alone: copyOperand,
    };
    const operands = buffers.length === 1 ? [buffers[0], buffers[0]] : buffers;
    return this.#runner.run(call, operands as [CommBuffer, boolean][], side);
  }

  /**
   * Resolves once every rank has called `barrier`.
   * @throws {RangeError} (the promise rejects) a bad root, peer, tag, length, algorithm or overlap
   * @throws {TypeError} a buffer of another communicator, or a bad dtype, op or memory kind
   * @throws {CommError} a peer failed, a call differs between ranks, or the timeout passed
   */
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
      return this.#runner.run(call, [], "host");
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
    return this.#pick(collective, "auto", bytes, sideOfMemory(this.transport, memory)).name;
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
    this.#runner.stop();
    this.#memory.gpu?.flush();
    try {
      await this.#transport.close();
    } catch (e) {
      // A failure this rank's calls already reported is not news.
      if (!this.#broken) throw this.#broke(e);
    }
  }

  /**
   * Marks the communicator broken by `e` and aborts the transport, so in-flight operations stop
   * and peers learn of it; returns `e` to be thrown.
   */
  #broke(e: unknown): unknown {
    if (this.#broken) return e;
    this.#broken = e instanceof Error ? e : new Error(String(e));
    this.#runner.stop();
    const error = e instanceof CommError
      ? e
      : new CommError(`${this.#broken.name}: ${this.#broken.message}`, { failedRank: this.rank });
    this.#transport.abort(error);
    return e;
  }

  #checkOpen(): void {
    if (this.#broken) throw this.#broken;
    if (this.#closed) throw new CommError(`Communicator of rank ${this.rank} is closed`);
  }

  /** `buf` as a buffer of this rank for a call that does `what`, on an open communicator. */
  #check(buf: BufferLike, what: string): CommBuffer {
    this.#checkOpen();
    return this.#args.buffer(buf, what);
  }

  #pick<C extends CollectiveName>(
    collective: C,
    algorithm: string | undefined,
    bytes: number,
    side: Side,
  ) {
    return pickAlgorithm(
      collective,
      algorithm,
      this.transport,
      bytes,
      this.size,
      side,
      this.#threads,
      this.#transport.links,
    );
  }

  #stamp(kind: CallKind, buf: CommBuffer, op: ReduceOp, root: number, a: Algorithm<unknown>) {
    return callStamp(kind, buf.dtype, buf.length, op, root, a.index);
  }
}

const BARRIER_STAMP = callStamp("barrier", "f32", 0, "sum", 0, 0);
