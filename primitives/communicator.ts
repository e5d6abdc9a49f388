/**
 * The Communicator: one rank's handle on a group of ranks. It validates arguments, picks an
 * algorithm from the registry, and runs it over the transport.
 * @module
 */

import { copy } from "../kernels/copy.ts";
import { divide } from "../kernels/reduce.ts";
import { CallBook, MAX_TAG } from "./call_book.ts";
import { barrierDissemination } from "./collectives/barrier_dissemination.ts";
import { CollectiveContext, type Completion, type Operand } from "./collectives/context.ts";
import { CommError, failureNotice, MismatchError, PeerFailedError } from "./errors.ts";
import { asCommBuffer, type BufferLike, CommBuffer, HostBuffer } from "./memory/comm_buffer.ts";
import { GpuBuffer } from "./memory/gpu.ts";
import type { GpuDevice } from "./memory/gpu_device.ts";
import { ManagedBuffer, type MigrationCount } from "./memory/managed.ts";
import type { RankHeap } from "./memory/heap.ts";
import type { RankMemory } from "./memory/rank_memory.ts";
import {
  type AlgorithmNeed,
  ALGORITHMS,
  algorithmsFor,
  autoAlgorithm,
  type CollectiveName,
  sideFor,
  sideOf,
  TRANSPORTS,
} from "./registry.ts";
import { callStamp } from "./stamp.ts";
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

/** The collectives whose last call is kept (those small messages run in loops). */
type RepeatedKind = "bcast" | "allreduce" | "reduce";
/** The options a kept call is compared on. */
type RepeatOptions = ReduceOptions & RootOptions;

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
  stamp: number;
  /** Runs the algorithm on the call's operands (and whatever the call does before it). */
  run: (ctx: CollectiveContext) => Completion;
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
  /**
   * Downloads of device buffers being sent over a host transport. They start before the send
   * yields, and a receive waits for them before it may block: on `shm` a receive blocks the
   * thread, and a download needs the event loop.
   */
  #stagedReads = new Set<Promise<void>>();
  /** Host areas of staged device messages, free for reuse. */
  #stagingFree: TypedArray[] = [];
  /** The failure that broke this communicator: every later call throws it. */
  #broken?: Error;
  /** The last checked call of each small-message collective (see {@linkcode #repeat}). */
  #kept: Partial<Record<RepeatedKind, KeptCall>> = {};

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
    const cb = this.#check(buf);
    this.#checkPeer(peer, "send to");
    const tag = this.#checkTag(options.tag ?? 0);
    const stamp = P2P_STAMPS[cb.dtype];
    try {
      const side = this.#side(cb);
      const device = this.#transport.device;
      if (side === "device" && device) {
        return await device.send(
          peer,
          await this.#resolve(cb, side, false) as GpuBuffer,
          tag,
          stamp,
        );
      }
      if (side === "host") {
        const view = cb instanceof HostBuffer ? cb.view : await this.#resolve(cb, side, false);
        return await this.#transport.send(peer, bytesOf(view as TypedArray), tag, stamp);
      }
      // A device buffer over a host transport: through host memory, as without CUDA-aware MPI.
      // The download starts now, before this call yields (see #stagedReads).
      const host = this.#stagingBuffer(cb);
      const read = cb.read(host);
      this.#stagedReads.add(read);
      try {
        await read;
      } finally {
        this.#stagedReads.delete(read);
      }
      try {
        await this.#transport.send(peer, bytesOf(host), tag, stamp);
      } finally {
        this.#stagingFree.push(host);
      }
    } catch (e) {
      throw this.#broke(e);
    }
  }

  /**
   * Receives the next message from `peer` with the tag into `buf` (lengths and dtypes must
   * match); `"any"` takes the first message of the tag from any other rank (MPI_ANY_SOURCE,
   * torch.distributed's `src=None`). Resolves with the sender's rank.
   */
  async recv(buf: BufferLike, peer: number | "any", options: TagOptions = {}): Promise<number> {
    const cb = this.#check(buf);
    if (peer !== "any") this.#checkPeer(peer, "receive from");
    else if (this.size === 1) {
      throw new RangeError("Cannot receive from any rank: this rank is the only one");
    }
    const tag = this.#checkTag(options.tag ?? 0);
    let stamp: number;
    try {
      const side = this.#side(cb);
      const device = this.#transport.device;
      if (peer === "any") {
        const others = Array.from({ length: this.size - 1 }, (_, i) => i < this.rank ? i : i + 1);
        peer = side === "device" && device
          ? await device.probe(others, tag)
          : await this.#transport.probe(others, tag);
      }
      if (side === "device" && device) {
        stamp = await device.recv(peer, await this.#resolve(cb, side, true) as GpuBuffer, tag);
      } else if (side === "host") {
        const view = cb instanceof HostBuffer ? cb.view : await this.#resolve(cb, side, true);
        stamp = await this.#transport.recv(peer, bytesOf(view as TypedArray), tag);
      } else {
        // A blocking transport (shm) would stall this rank's own downloads for the sends of this
        // moment (a sendrecv's): let them finish before the receive may block.
        await null;
        await Promise.all(this.#stagedReads);
        const host = this.#stagingBuffer(cb);
        try {
          stamp = await this.#transport.recv(peer, bytesOf(host), tag);
          await cb.write(host);
        } finally {
          this.#stagingFree.push(host);
        }
      }
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
    return peer;
  }

  /** Copies `buf` on `root` into `buf` on every rank. */
  bcast(buf: BufferLike, options: RootOptions & AlgorithmOptions = {}): Promise<void> {
    return this.#repeat("bcast", buf, options) ?? this.#bcast(buf, options);
  }

  async #bcast(buf: BufferLike, options: RootOptions & AlgorithmOptions): Promise<void> {
    const cb = this.#check(buf);
    const root = this.#checkRoot(options.root ?? 0, "broadcast from");
    const side = this.#side(cb);
    const a = this.#pick("bcast", options.algorithm, bytesIn(cb), side);
    if (this.size === 1) return;
    try {
      const b = cb instanceof HostBuffer
        ? cb.view
        : await this.#resolve(cb, side, this.rank !== root);
      const stamp = callStamp("bcast", cb.dtype, cb.length, "sum", root, a.index);
      const run = (ctx: CollectiveContext) => a.run(ctx, b, root);
      if (cb instanceof HostBuffer) this.#keep("bcast", buf, options, stamp, run);
      const pending = run(this.#begin(stamp));
      if (pending) await pending;
    } catch (e) {
      throw this.#broke(e);
    }
  }

  /** Reduces every rank's `buf` into `buf` (or `out`) on every rank. */
  allreduce(buf: BufferLike, options: ReduceOptions = {}): Promise<void> {
    return this.#repeat("allreduce", buf, options) ?? this.#allreduce(buf, options);
  }

  async #allreduce(buf: BufferLike, options: ReduceOptions): Promise<void> {
    const input = this.#check(buf);
    const output = this.#output(input, options.out, "allreduce");
    const op = checkOp(options.op ?? "sum");
    const side = this.#side(input, output);
    const a = this.#pick("allreduce", options.algorithm, bytesIn(input), side);
    try {
      let i: Operand, o: Operand;
      if (input instanceof HostBuffer && output instanceof HostBuffer) {
        i = input.view;
        o = output.view;
      } else {
        i = await this.#resolve(input, side, false);
        o = await this.#resolve(output, side, true);
      }
      if (this.size > 1) {
        const stamp = callStamp("allreduce", input.dtype, input.length, op, 0, a.index);
        const kop = kernelOp(op);
        const run = (ctx: CollectiveContext) => a.run(ctx, i, o, kop);
        if (op !== "avg" && input instanceof HostBuffer && output instanceof HostBuffer) {
          this.#keep("allreduce", buf, options, stamp, run);
        }
        const pending = run(this.#begin(stamp));
        if (pending) await pending;
      } else copyOperand(i, o);
      if (op === "avg") divideOperand(o, this.size);
    } catch (e) {
      throw this.#broke(e);
    }
  }

  /** Reduces every rank's `buf` into `buf` (or `out`) on `root`; other ranks' buffers are unchanged. */
  reduce(buf: BufferLike, options: ReduceOptions & RootOptions = {}): Promise<void> {
    return this.#repeat("reduce", buf, options) ?? this.#reduce(buf, options);
  }

  async #reduce(buf: BufferLike, options: ReduceOptions & RootOptions): Promise<void> {
    const root = this.#checkRoot(options.root ?? 0, "reduce to");
    const input = this.#check(buf);
    const target = this.rank === root ? this.#output(input, options.out, "reduce") : input;
    const op = checkOp(options.op ?? "sum");
    const side = this.#side(input, target);
    const a = this.#pick("reduce", options.algorithm, bytesIn(input), side);
    try {
      const isRoot = this.rank === root;
      let i: Operand, o: Operand;
      if (input instanceof HostBuffer && target instanceof HostBuffer) {
        i = input.view;
        o = target.view;
      } else {
        i = await this.#resolve(input, side, isRoot && target === input);
        o = target === input ? i : await this.#resolve(target, side, true);
      }
      if (this.size > 1) {
        const stamp = callStamp("reduce", input.dtype, input.length, op, root, a.index);
        const kop = kernelOp(op);
        const run = (ctx: CollectiveContext) => a.run(ctx, i, o, kop, root);
        if (op !== "avg" && input instanceof HostBuffer && target instanceof HostBuffer) {
          this.#keep("reduce", buf, options, stamp, run);
        }
        const pending = run(this.#begin(stamp));
        if (pending) await pending;
      } else copyOperand(i, o);
      if (op === "avg" && isRoot) divideOperand(o, this.size);
    } catch (e) {
      throw this.#broke(e);
    }
  }

  /** Gathers every rank's `send` (n elements) into `recv` (size × n), in rank order. */
  async allgather(
    send: BufferLike,
    recv: BufferLike,
    options: AlgorithmOptions = {},
  ): Promise<void> {
    const s = this.#check(send), r = this.#check(recv);
    this.#checkPair(s, r, r.length === s.length * this.size, "allgather", "recv = size × send");
    const side = this.#side(s, r);
    const a = this.#pick("allgather", options.algorithm, bytesIn(r), side);
    try {
      const [so, ro] = s instanceof HostBuffer && r instanceof HostBuffer
        ? [s.view, r.view]
        : [await this.#resolve(s, side, false), await this.#resolve(r, side, true)];
      if (this.size === 1) return copyOperand(so, ro);
      const stamp = callStamp("allgather", s.dtype, s.length, "sum", 0, a.index);
      const pending = a.run(this.#begin(stamp), so, ro);
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
    const s = this.#check(send), r = this.#check(recv);
    this.#checkPair(s, r, s.length === r.length * this.size, "reduceScatter", "send = size × recv");
    const op = checkOp(options.op ?? "sum");
    const side = this.#side(s, r);
    const a = this.#pick("reduceScatter", options.algorithm, bytesIn(s), side);
    try {
      const [so, ro] = s instanceof HostBuffer && r instanceof HostBuffer
        ? [s.view, r.view]
        : [await this.#resolve(s, side, false), await this.#resolve(r, side, true)];
      if (this.size > 1) {
        const stamp = callStamp("reduceScatter", r.dtype, r.length, op, 0, a.index);
        const pending = a.run(this.#begin(stamp), so, ro, kernelOp(op));
        if (pending) await pending;
      } else copyOperand(so, ro);
      if (op === "avg") divideOperand(ro, this.size);
    } catch (e) {
      throw this.#broke(e);
    }
  }

  /** Resolves once every rank has called `barrier`. */
  async barrier(): Promise<void> {
    this.#checkOpen();
    if (this.size === 1) return;
    try {
      const ctx = this.#begin(BARRIER_STAMP);
      const { shared, device } = this.#transport;
      if (shared) shared.barrier(ctx.stamp);
      else if (device) await device.join(ctx.stamp, null, () => {});
      else await barrierDissemination(ctx);
    } catch (e) {
      throw this.#broke(e);
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

  /** Closes the transport; later calls throw. Work enqueued on the device still runs. */
  async [Symbol.asyncDispose](): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#memory.gpu?.flush();
      await this.#transport.close();
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
    return this.#runKept(r);
  }

  /** Runs a kept call; not `async`, so a call that completes at once allocates no promise. */
  #runKept(r: KeptCall): Promise<void> {
    try {
      this.#checkOpen();
    } catch (e) {
      return Promise.reject(e);
    }
    try {
      const pending = r.run(this.#begin(r.stamp));
      return pending
        ? pending.catch((e) => {
          throw this.#broke(e);
        })
        : DONE;
    } catch (e) {
      return Promise.reject(this.#broke(e));
    }
  }

  /** Keeps a checked call on host buffers for {@linkcode #repeat}. */
  #keep(
    kind: RepeatedKind,
    buf: BufferLike,
    o: RepeatOptions,
    stamp: number,
    run: (ctx: CollectiveContext) => Completion,
  ): void {
    const { out, op, root, algorithm } = o;
    this.#kept[kind] = { buf, length: buf.length, out, op, root, algorithm, stamp, run };
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
    side: Side,
  ): typeof ALGORITHMS[C][string] {
    const name = algorithm === undefined || algorithm === "auto"
      ? autoAlgorithm(collective, this.transport, bytes, this.size, side)
      : algorithm;
    const table = ALGORITHMS[collective] as Record<string, typeof ALGORITHMS[C][string]>;
    const picked = table[name];
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

  /** The checked `out` buffer for `input`, or `input` itself when there is none. */
  #output(input: CommBuffer, out: BufferLike | undefined, what: string): CommBuffer {
    if (out === undefined) return input;
    const output = this.#check(out);
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
