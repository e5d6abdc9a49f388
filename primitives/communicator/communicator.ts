/**
 * The Communicator: one rank's handle on a group of ranks. It checks arguments
 * (call_arguments.ts), picks an algorithm from the registry, and runs it over the transport
 * (collective_runner.ts; point_to_point.ts for messages). Any number of calls may be in flight:
 * each runs on a context of its own, and calls begin in the order this rank issued them
 * (issue_order.ts), which is how peers match them.
 * @module
 */

import { CallArguments } from "./call_arguments.ts";
import { CallLog, MAX_TAG } from "./call_log.ts";
import { type CheckedCall, planCall } from "./collective_call.ts";
import { CollectiveRunner, type PlannedCall } from "./collective_runner.ts";
import { barrierDissemination } from "../collectives/barrier_dissemination.ts";
import { CommError, failureNotice, PeerFailedError } from "../errors.ts";
import type { BufferLike, CommBuffer, HostBuffer } from "../memory/comm_buffer.ts";
import type { GpuDevice } from "../memory/gpu_device.ts";
import type { MigrationCount } from "../memory/managed.ts";
import type { RankHeap } from "../memory/heap.ts";
import type { RankMemory } from "../memory/rank_memory.ts";
import { pickAlgorithm, pickHostAlgorithm } from "../auto.ts";
import { HOST } from "./operands.ts";
import { InFlight } from "./in_flight.ts";
import { accumulatorBytes } from "./reproducible.ts";
import { onHost } from "../collectives/algorithm.ts";
import type {
  AlgorithmOptions,
  AllocOptions,
  ReduceOptions,
  RootOptions,
  TagOptions,
} from "../collectives/options.ts";
import { PointToPoint } from "./point_to_point.ts";
import { callStamp } from "./stamp.ts";
import type { RankKind, Transport } from "../transports/transport.ts";
import type { LinkCosts, Side, TypedArray } from "../types.ts";
import { ALLGATHER } from "../collectives/allgather.ts";
import { ALLREDUCE } from "../collectives/allreduce.ts";
import { ALLTOALL } from "../collectives/alltoall.ts";
import { ALLTOALLV, type AlltoallvOptions } from "../collectives/alltoallv.ts";
import { ALLGATHERV, type AllgathervOptions } from "../collectives/allgatherv.ts";
import { GATHERV, type GathervOptions } from "../collectives/gatherv.ts";
import { SCATTERV, type ScattervOptions } from "../collectives/scatterv.ts";
import { REDUCE_SCATTERV, type ReduceScattervOptions } from "../collectives/reduce_scatterv.ts";
import { BCAST } from "../collectives/bcast.ts";
import { GATHER } from "../collectives/gather.ts";
import { REDUCE } from "../collectives/reduce.ts";
import { REDUCE_SCATTER } from "../collectives/reduce_scatter.ts";
import { SCATTER } from "../collectives/scatter.ts";
import { bytesIn } from "../memory/extent.ts";
import type { CollectiveName } from "../collectives/collective_table.ts";

export type {
  AlgorithmOptions,
  AllgathervOptions,
  AllocOptions,
  AlltoallvOptions,
  GathervOptions,
  ReduceOptions,
  ReduceScattervOptions,
  RootOptions,
  ScattervOptions,
  TagOptions,
};
export { MAX_TAG };

/**
 * One rank's view of a group of `size` ranks.
 *
 * Calls may overlap (`Promise.all([comm.allreduce(a), comm.bcast(b)])`), as NCCL calls on one
 * stream or MPI's nonblocking collectives: ranks match collectives in the order each issued them,
 * so every rank must issue the same collectives in the same order; point-to-point messages keep
 * their order per peer and tag.
 *
 * @example Allreduce in place
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { spawnRanks } from "../../core.ts";
 *
 * // examples/allreduce_rank.ts, which every rank runs:
 * //   const buf = comm.alloc(1 << 20, { memory: "shared" });
 * //   buf.view.fill(comm.rank + 1);
 * //   await comm.allreduce(buf, { op: "sum" });
 * //   return buf.view[0];
 * const module = new URL("../../examples/allreduce_rank.ts", import.meta.url);
 * assertEquals(await spawnRanks<number>(module, { size: 3 }), [6, 6, 6]);
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
  /** The algorithm each collective's last call ran. */
  readonly #ran: Partial<Record<CollectiveName, string>> = {};
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
    const calls = new CallLog(transport.rank);
    CALL_LOGS.set(this, calls);
    const hooks = { checkOpen: () => this.#checkOpen(), broke: (e: unknown) => this.#broke(e) };
    this.#args = new CallArguments(this.rank, this.size, memory, transport.facts);
    this.#threads = transport.hierarchy?.threads ?? 1;
    const inFlight = new InFlight();
    this.#runner = new CollectiveRunner(transport, {
      heap: memory.heap,
      calls,
      hooks,
      inFlight,
      pickHost: (ctx, collective, bytes) =>
        hostPick(ctx.transport, collective as CollectiveName, bytes).run,
    });
    this.#p2p = new PointToPoint(transport, memory, { calls, hooks, inFlight });
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

  /** What each rank is (a Deno process or a browser tab), where the group mixes them. */
  get members(): readonly RankKind[] | undefined {
    return this.#transport.members;
  }

  /**
   * How a simulated group (`sim`: docs/transports/sim.md) carries payloads: `real` (carried and
   * checked) or `phantom` (sized only); undefined where the transport is not simulated.
   */
  get simulatedPayload(): "real" | "phantom" | undefined {
    return this.#transport.simulated?.model.payload;
  }

  /**
   * This rank's clock, ms: `performance.now()`, or the virtual clock of a simulated group (what
   * a benchmark times with).
   */
  now(): number {
    return this.#transport.simulated?.now() ?? performance.now();
  }

  /** Name of the transport underneath. */
  get transport(): string {
    return this.#transport.facts.name;
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
  alloc(count: number, options?: AllocOptions): CommBuffer {
    options ??= {};
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
  send(buf: BufferLike, peer: number, options?: TagOptions): Promise<void> {
    options ??= {};
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
  recv(buf: BufferLike, peer: number | "any", options?: TagOptions): Promise<number> {
    options ??= {};
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
  bcast(buf: BufferLike, options?: RootOptions & AlgorithmOptions): Promise<void> {
    options ??= {};
    return this.#runner.repeat("bcast", buf, options) ??
      this.#collective(() => BCAST.check(this.#args, buf, options));
  }

  /**
   * Reduces every rank's `buf` into `buf` (or `out`) on every rank.
   * @throws {RangeError} (the promise rejects) a bad root, peer, tag, length, algorithm or overlap
   * @throws {TypeError} a buffer of another communicator, or a bad dtype, op or memory kind
   * @throws {CommError} a peer failed, a call differs between ranks, or the timeout passed
   */
  allreduce(buf: BufferLike, options?: ReduceOptions): Promise<void> {
    options ??= {};
    return this.#runner.repeat("allreduce", buf, options) ??
      this.#collective(() => ALLREDUCE.check(this.#args, buf, options));
  }

  /**
   * Reduces every rank's `buf` into `buf` (or `out`) on `root`; other ranks' buffers are unchanged.
   * @throws {RangeError} (the promise rejects) a bad root, peer, tag, length, algorithm or overlap
   * @throws {TypeError} a buffer of another communicator, or a bad dtype, op or memory kind
   * @throws {CommError} a peer failed, a call differs between ranks, or the timeout passed
   */
  reduce(buf: BufferLike, options?: ReduceOptions & RootOptions): Promise<void> {
    options ??= {};
    return this.#runner.repeat("reduce", buf, options) ??
      this.#collective(() => REDUCE.check(this.#args, buf, options));
  }

  /**
   * Gathers every rank's `send` (n elements) into `recv` (size × n), in rank order. In place:
   * `send` is this rank's block of `recv` (`recv.subarray(rank * n, (rank + 1) * n)`).
   * @throws {RangeError} (the promise rejects) a bad root, peer, tag, length, algorithm or overlap
   * @throws {TypeError} a buffer of another communicator, or a bad dtype, op or memory kind
   * @throws {CommError} a peer failed, a call differs between ranks, or the timeout passed
   */
  allgather(send: BufferLike, recv: BufferLike, options?: AlgorithmOptions): Promise<void> {
    options ??= {};
    return this.#runner.repeat("allgather", send, options, recv) ??
      this.#collective(() => ALLGATHER.check(this.#args, send, recv, options));
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
    options?: Omit<ReduceOptions, "out">,
  ): Promise<void> {
    options ??= {};
    return this.#runner.repeat("reduceScatter", send, options, recv) ??
      this.#collective(() => REDUCE_SCATTER.check(this.#args, send, recv, options));
  }

  /**
   * Sends block j of `send` (size × n elements) to rank j, and receives rank i's block for this
   * rank into block i of `recv` (size × n): MPI_Alltoall, torch.distributed's `all_to_all_single`.
   * The buffers must not overlap.
   * @throws {RangeError} (the promise rejects) a bad root, peer, tag, length, algorithm or overlap
   * @throws {TypeError} a buffer of another communicator, or a bad dtype, op or memory kind
   * @throws {CommError} a peer failed, a call differs between ranks, or the timeout passed
   */
  alltoall(send: BufferLike, recv: BufferLike, options?: AlgorithmOptions): Promise<void> {
    options ??= {};
    return this.#runner.repeat("alltoall", send, options, recv) ??
      this.#collective(() => ALLTOALL.check(this.#args, send, recv, options));
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
    options?: RootOptions & AlgorithmOptions,
  ): Promise<void> {
    options ??= {};
    return this.#runner.repeat("gather", send, options, recv) ??
      this.#collective(() => GATHER.check(this.#args, send, recv, options));
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
    options?: RootOptions & AlgorithmOptions,
  ): Promise<void> {
    options ??= {};
    return this.#runner.repeat("scatter", recv, options, send) ??
      this.#collective(() => SCATTER.check(this.#args, send, recv, options));
  }

  /**
   * Sends block j of `send` (`sendCounts[j]` elements from `sendDispls[j]`) to rank j, and
   * receives rank i's block for this rank as block i of `recv` (`recvCounts[i]` from
   * `recvDispls[i]`): MPI_Alltoallv, torch's `all_to_all_single` with split sizes. Counts and
   * displacements are arrays or typed arrays, one entry per rank; displacements default to the
   * blocks packed in rank order. In place (`send` is `recv`), `recv`'s counts serve both.
   * @throws {RangeError} (the promise rejects) a bad count, displacement, block, length or algorithm
   * @throws {TypeError} a buffer of another communicator, or a bad dtype, op or memory kind
   * @throws {CommError} a peer failed, a count differs from its peer's, or the timeout passed
   */
  alltoallv(send: BufferLike, recv: BufferLike, options: AlltoallvOptions): Promise<void> {
    return this.#runner.repeat("alltoallv", send, options, recv) ??
      this.#collective(() => ALLTOALLV.check(this.#args, send, recv, options));
  }

  /**
   * Gathers every rank's `send` into every rank's `recv`, rank r's as `recvCounts[r]` elements
   * from `recvDispls[r]` (packed in rank order by default): MPI_Allgatherv. In place: `send` is
   * this rank's block of `recv`.
   * @throws {RangeError} (the promise rejects) a bad count, displacement, block, length or algorithm
   * @throws {TypeError} a buffer of another communicator, or a bad dtype, op or memory kind
   * @throws {CommError} a peer failed, the counts differ between ranks, or the timeout passed
   */
  allgatherv(send: BufferLike, recv: BufferLike, options: AllgathervOptions): Promise<void> {
    return this.#runner.repeat("allgatherv", send, options, recv) ??
      this.#collective(() => ALLGATHERV.check(this.#args, send, recv, options));
  }

  /**
   * Gathers every rank's `send` into the root's `recv`, rank r's as `recvCounts[r]` elements
   * from `recvDispls[r]` (packed by default); other ranks pass no `recv` and no counts:
   * MPI_Gatherv. In place: the root's `send` is its block of `recv`.
   * @throws {RangeError} (the promise rejects) a bad root, count, displacement, block or length
   * @throws {TypeError} a buffer of another communicator, or a bad dtype, op or memory kind
   * @throws {CommError} a peer failed, a count differs from the root's, or the timeout passed
   */
  gatherv(
    send: BufferLike,
    recv: BufferLike | undefined,
    options?: GathervOptions,
  ): Promise<void> {
    options ??= {};
    return this.#runner.repeat("gatherv", send, options, recv) ??
      this.#collective(() => GATHERV.check(this.#args, send, recv, options));
  }

  /**
   * Scatters block r of the root's `send` (`sendCounts[r]` elements from `sendDispls[r]`,
   * packed by default) into rank r's `recv`; other ranks pass no `send` and no counts:
   * MPI_Scatterv. In place: the root's `recv` is its block of `send`.
   * @throws {RangeError} (the promise rejects) a bad root, count, displacement, block or length
   * @throws {TypeError} a buffer of another communicator, or a bad dtype, op or memory kind
   * @throws {CommError} a peer failed, a count differs from the root's, or the timeout passed
   */
  scatterv(
    send: BufferLike | undefined,
    recv: BufferLike,
    options?: ScattervOptions,
  ): Promise<void> {
    options ??= {};
    return this.#runner.repeat("scatterv", recv, options, send) ??
      this.#collective(() => SCATTERV.check(this.#args, send, recv, options));
  }

  /**
   * Reduces every rank's `send` (the sum of `recvCounts` elements) and leaves rank r's share,
   * `recvCounts[r]` elements in rank order, in its `recv`: MPI_Reduce_scatter with counts. In
   * place: `recv` is this rank's block of `send`.
   * @throws {RangeError} (the promise rejects) a bad count, length, op or algorithm
   * @throws {TypeError} a buffer of another communicator, or a bad dtype, op or memory kind
   * @throws {CommError} a peer failed, the counts differ between ranks, or the timeout passed
   */
  reduceScatterv(
    send: BufferLike,
    recv: BufferLike,
    options: ReduceScattervOptions,
  ): Promise<void> {
    return this.#runner.repeat("reduceScatterv", send, options, recv) ??
      this.#collective(() => REDUCE_SCATTERV.check(this.#args, send, recv, options));
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
      const call: PlannedCall<TypedArray> = {
        stamp: BARRIER_STAMP,
        side: HOST,
        run: (ctx) => {
          if (shared) return shared.barrier(ctx.stamp);
          if (device) return device.join(ctx.stamp, null, () => {});
          return barrierDissemination(ctx);
        },
      };
      return this.#runner.runOnHost(call, []);
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
  async abort(reason?: unknown): Promise<void> {
    reason ??= new Error("aborted");
    if (!this.#broken) {
      const { failedRank, reason: why } = failureNotice(reason, this.rank);
      this.#broke(new PeerFailedError(failedRank, why));
    }
    await this[Symbol.asyncDispose]();
  }

  /**
   * The algorithm the last call of `collective` ran: `auto`'s pick at its size, or the one it
   * named (for reports, as the benchmark's `picked`); undefined before the first.
   */
  lastAlgorithm(collective: CollectiveName): string | undefined {
    return this.#ran[collective];
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
    return pickAlgorithm(collective, {
      algorithm,
      transport: this.#transport.facts,
      bytes,
      size: this.size,
      side,
      threads: this.#threads,
      links: this.#transport.links,
    });
  }

  /**
   * Checks a collective call's arguments (`check`), then picks, stamps and runs it: on host views
   * or device buffers, as the algorithm picked for its side works. Every collective comes this
   * way; a wrong argument rejects before anything is sent.
   */
  #collective<C extends CollectiveName>(check: () => CheckedCall<C>): Promise<void> {
    try {
      this.#checkOpen();
      const call = check();
      const [[input], [output]] = call.buffers;
      const side = this.#args.side(input, output);
      const bytes = call.reproducible
        ? accumulatorBytes(call.collective, input, call.block)
        : call.bytes ?? bytesIn(call.block);
      const picked = this.#pick(call.collective, call.algorithm, bytes, side);
      // A reproducible call on device buffers sums on the host (reproducible.ts): that one ran.
      this.#ran[call.collective] = call.reproducible && !onHost(picked)
        ? hostPick(this.#transport, call.collective, bytes).name
        : picked.name;
      const planned = planCall(picked, call, this.size);
      return planned.onHost
        ? this.#runner.runOnHost(planned.call, call.buffers, call.keep)
        : this.#runner.runOnDevice(planned.call, call.buffers);
    } catch (e) {
      return Promise.reject(e);
    }
  }
}

/** The host algorithm `auto` picks for `collective` on `bytes` over `transport`'s group. */
function hostPick(transport: Transport, collective: CollectiveName, bytes: number) {
  return pickHostAlgorithm(collective, {
    transport: transport.facts,
    bytes,
    size: transport.size,
    links: transport.links,
  });
}

const BARRIER_STAMP = callStamp("barrier", "f32", 0, "sum", 0, 0);

/** Each communicator's call log, for {@linkcode recentCalls} (the launchers' side, not users'). */
const CALL_LOGS = new WeakMap<Communicator, Pick<CallLog, "recent">>();

/** How many of a rank's latest calls its launcher hears of. */
const REPORTED_CALLS = 16;

/**
 * Where {@linkcode recentCalls} reads `comm`'s calls when another thread makes them for it (a
 * progress thread's communicator: progress_thread.ts), as `latest` last heard of them.
 */
export function recordCallsOf(comm: Communicator, latest: () => [number, number][]): void {
  CALL_LOGS.set(comm, { recent: (n) => latest().slice(-n) });
}

/**
 * `comm`'s latest collective calls, oldest first, as `[tag, stamp]` pairs: a rank reports them
 * when it ends, and its launcher's verdict finds the rank whose call differs from the others'.
 */
export function recentCalls(comm: Communicator): [number, number][] {
  return CALL_LOGS.get(comm)?.recent(REPORTED_CALLS) ?? [];
}
