/**
 * A rank whose communicator runs on a progress thread of its own (MPICH's async progress, NCCL's
 * proxy thread): the rank's thread holds a {@linkcode ProgressCommunicator}, which forwards every
 * call to a worker where the real communicator runs over the transport, so a call goes on while
 * the rank's thread computes. Buffers cross as slices of the rank's heap, which both threads
 * share; other host buffers are staged through it. The worker's side is progress_server.ts.
 * @module
 */

import { Communicator, recordCallsOf } from "./communicator.ts";
import { CommBuffer, HostBuffer, ownerOf } from "../memory/comm_buffer.ts";
import type { RankHeap } from "../memory/heap.ts";
import type { RankMemory } from "../memory/rank_memory.ts";
import type { CollectiveName } from "../collectives/collective_table.ts";
import { CommError, errorFromReport, type ErrorReport, errorReport } from "../errors.ts";
import type { RankKind, Transport, TransportFacts } from "../transports/transport.ts";
import { type Dtype, dtypeOf, type LinkCosts, makeView, type TypedArray } from "../types.ts";

/** The calls that cross to the progress thread: every collective, messages and barrier. */
export type ProgressMethod = CollectiveName | "send" | "recv" | "barrier";

/** A buffer as it crosses: where its elements lie in the rank's heap. */
export interface HeapSlice {
  heapSlice: true;
  dtype: Dtype;
  byteOffset: number;
  length: number;
}

/** Rank's thread → progress thread. */
export type ProgressRequest = { id: number } & ProgressCall;

/** A request without its id. */
export type ProgressCall =
  | { method: ProgressMethod; args: unknown[] }
  | { method: "abort"; reason: ErrorReport }
  | { method: "close" };

/** Progress thread → rank's thread: how request `id` ended. */
export interface ProgressReply {
  id: number;
  /** What the call resolved with (a receive's sender). */
  value?: number;
  /** The algorithm a collective ran. */
  algorithm?: string;
  error?: ErrorReport;
  /** The communicator's latest calls, on closing and on failures (for the launcher's blame). */
  calls?: [number, number][];
}

/** What the progress thread says once its communicator has joined the group. */
export interface ProgressJoined {
  rank: number;
  size: number;
  links?: LinkCosts;
  members?: readonly RankKind[];
}

/**
 * Either end of the channel between the two threads: a Worker, or the worker's own scope. (A
 * ring of shared memory woken by `Atomics.waitAsync` was measured as no faster: docs/progress.md.)
 */
export interface ProgressPort {
  postMessage(message: unknown): void;
  onmessage: ((e: MessageEvent) => void) | null;
}

/** Progress thread → rank's thread, once: it joined, or why it could not. */
export type ProgressJoin = { joined: ProgressJoined } | { failed: ErrorReport };

/**
 * Starts a rank's progress thread in `worker` with `init` (what it joins with, which its entry
 * reads) and resolves with the rank's side once it has joined; rejects with its failure.
 */
export async function startProgressThread(
  worker: Worker,
  init: unknown,
  facts: TransportFacts,
  memory: RankMemory,
): Promise<ProgressCommunicator> {
  const joined = await new Promise<ProgressJoin>((resolve) => {
    worker.onmessage = ({ data }) => resolve(data);
    worker.onerror = (e) => {
      e.preventDefault();
      resolve({ failed: { name: "Error", message: `its progress thread failed: ${e.message}` } });
    };
    worker.postMessage(init);
  });
  if ("failed" in joined) {
    worker.terminate();
    throw errorFromReport(joined.failed);
  }
  const comm = new ProgressCommunicator(worker, joined.joined, facts, memory, () => {
    worker.terminate();
  });
  worker.onerror = (e) => {
    e.preventDefault();
    comm.lost(e.message);
  };
  return comm;
}

/**
 * The rank's handle on a communicator running on its progress thread: the same calls as any
 * Communicator, each one forwarded whole, so that it progresses while this thread computes.
 * Buffers must be host memory; `shared` buffers (this rank's heap) cross without a copy.
 */
export class ProgressCommunicator extends Communicator {
  readonly #port: ProgressPort;
  readonly #end: () => void;
  readonly #heap: RankHeap;
  readonly #memory: RankMemory;
  readonly #pending = new Map<number, { settle(reply: ProgressReply): void }>();
  readonly #ran: Partial<Record<CollectiveName, string>> = {};
  #calls: [number, number][] = [];
  #next = 1;
  /** Why the progress thread is gone, once it is. */
  #lost?: Error;
  /** Closed or aborted: the progress thread was told, and ended. */
  #ended = false;

  /**
   * The rank's side of a progress thread that joined as `joined` says, over a transport with
   * `facts`, sharing `memory`'s heap with it and talking over `port`; `end` ends the thread once
   * the communicator is closed. Launchers make one (Deno's: deno/launch/progress.ts).
   */
  constructor(
    port: ProgressPort,
    joined: ProgressJoined,
    facts: TransportFacts,
    memory: RankMemory,
    end: () => void,
  ) {
    super(forwardedTransport(joined, facts), memory);
    this.#port = port;
    this.#heap = memory.heap;
    this.#memory = memory;
    this.#end = end;
    port.onmessage = ({ data }: MessageEvent<ProgressReply>) => {
      if (data.calls) this.#calls = data.calls;
      this.#pending.get(data.id)?.settle(data);
    };
    recordCallsOf(this, () => this.#calls);
  }

  /** The progress thread died: every pending and later call fails with `error`. */
  lost(error: unknown): void {
    this.#lost ??= new CommError(
      `Rank ${this.rank}'s progress thread failed: ${errorReport(error).message}`,
      { failedRank: this.rank },
    );
    for (const p of this.#pending.values()) p.settle({ id: 0, error: errorReport(this.#lost) });
  }

  override send(...args: Parameters<Communicator["send"]>): Promise<void> {
    return this.#forward("send", args).then(() => {});
  }
  override recv(...args: Parameters<Communicator["recv"]>): Promise<number> {
    return this.#forward("recv", args).then((r) => r.value!);
  }
  override bcast(...args: Parameters<Communicator["bcast"]>): Promise<void> {
    return this.#collective("bcast", args);
  }
  override allreduce(...args: Parameters<Communicator["allreduce"]>): Promise<void> {
    return this.#collective("allreduce", args);
  }
  override reduce(...args: Parameters<Communicator["reduce"]>): Promise<void> {
    return this.#collective("reduce", args);
  }
  override allgather(...args: Parameters<Communicator["allgather"]>): Promise<void> {
    return this.#collective("allgather", args);
  }
  override reduceScatter(...args: Parameters<Communicator["reduceScatter"]>): Promise<void> {
    return this.#collective("reduceScatter", args);
  }
  override alltoall(...args: Parameters<Communicator["alltoall"]>): Promise<void> {
    return this.#collective("alltoall", args);
  }
  override gather(...args: Parameters<Communicator["gather"]>): Promise<void> {
    return this.#collective("gather", args);
  }
  override scatter(...args: Parameters<Communicator["scatter"]>): Promise<void> {
    return this.#collective("scatter", args);
  }
  override alltoallv(...args: Parameters<Communicator["alltoallv"]>): Promise<void> {
    return this.#collective("alltoallv", args);
  }
  override allgatherv(...args: Parameters<Communicator["allgatherv"]>): Promise<void> {
    return this.#collective("allgatherv", args);
  }
  override gatherv(...args: Parameters<Communicator["gatherv"]>): Promise<void> {
    return this.#collective("gatherv", args);
  }
  override scatterv(...args: Parameters<Communicator["scatterv"]>): Promise<void> {
    return this.#collective("scatterv", args);
  }
  override reduceScatterv(...args: Parameters<Communicator["reduceScatterv"]>): Promise<void> {
    return this.#collective("reduceScatterv", args);
  }
  override barrier(): Promise<void> {
    return this.#forward("barrier", []).then(() => {});
  }

  override lastAlgorithm(collective: CollectiveName): string | undefined {
    return this.#ran[collective];
  }

  override async abort(reason?: unknown): Promise<void> {
    reason ??= new Error("aborted");
    if (this.#ended) return await super.abort(reason);
    this.#ended = true;
    await this.#request({ method: "abort", reason: errorReport(reason) }, true).catch(() => {});
    this.#stop();
    await super.abort(reason);
  }

  override async [Symbol.asyncDispose](): Promise<void> {
    if (this.#ended) return;
    this.#ended = true;
    try {
      await this.#request({ method: "close" }, true);
    } finally {
      this.#stop();
    }
    await super[Symbol.asyncDispose]();
  }

  /** Ends the progress thread. */
  #stop(): void {
    this.#port.onmessage = null;
    this.#end();
  }

  #collective(method: CollectiveName, args: unknown[]): Promise<void> {
    return this.#forward(method, args).then((r) => {
      if (r.algorithm) this.#ran[method] = r.algorithm;
    });
  }

  /** Sends a call with its buffers as heap slices; copies staged outputs back once it ends. */
  #forward(method: ProgressMethod, args: unknown[]): Promise<ProgressReply> {
    let carried: Carried;
    try {
      carried = this.#carry(method, args);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.#request({ method, args: carried.args }).finally(carried.done);
  }

  #request(request: ProgressCall, ending = false): Promise<ProgressReply> {
    if (this.#lost) return Promise.reject(this.#lost);
    if (this.#ended && !ending) {
      return Promise.reject(new CommError(`Communicator of rank ${this.rank} is closed`));
    }
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, {
        settle: (reply) => {
          this.#pending.delete(id);
          if (reply.error) reject(errorFromReport(reply.error));
          else resolve(reply);
        },
      });
      this.#port.postMessage({ id, ...request });
    });
  }

  /** `args` with every buffer (and an `out` option) as a slice of the heap. */
  #carry(method: ProgressMethod, args: unknown[]): Carried {
    const staged = new Staging(this.#heap);
    try {
      const written = outputOf(method, args);
      const slice = (buf: unknown) => {
        if (!(buf instanceof CommBuffer || isTypedArray(buf))) return buf;
        const view = this.#hostView(buf);
        return this.#heap.owns(view) ? heapSlice(view) : staged.slice(view, buf === written);
      };
      const sent = args.map((a) =>
        isOptions(a) && a.out !== undefined ? { ...a, out: slice(a.out) } : slice(a)
      );
      staged.place();
      return { args: sent, done: () => staged.done() };
    } catch (e) {
      staged.done();
      throw e;
    }
  }

  #hostView(buf: CommBuffer | TypedArray): TypedArray {
    if (isTypedArray(buf)) return buf;
    const owner = ownerOf(buf);
    if (owner !== undefined && owner !== this.#memory) {
      throw new TypeError(
        `Rank ${this.rank} cannot use a buffer allocated by another communicator: a buffer ` +
          `belongs to the communicator that allocated it`,
      );
    }
    if (!(buf instanceof HostBuffer)) {
      throw new TypeError(
        `A progress thread carries host buffers (host or shared memory); ${buf.memory} memory ` +
          `is not accepted: run the rank without a progress thread`,
      );
    }
    return buf.view;
  }
}

/** Arguments as they cross, and what to do once the call ends. */
interface Carried {
  args: unknown[];
  done: () => void;
}

/** A buffer's bytes that a call's views cover, and their copy in the heap. */
interface Span {
  from: number;
  to: number;
  /** A view the call writes lies in it: it is copied back. */
  written: boolean;
  copy?: Uint8Array;
}

/**
 * Host buffers outside the heap, copied into it for one call: views of one buffer share one copy
 * of the span they cover, so a call in place stays in place; `done` copies the spans back.
 */
class Staging {
  readonly #heap: RankHeap;
  readonly #spans = new Map<ArrayBufferLike, Span>();
  readonly #views: [TypedArray, HeapSlice][] = [];

  constructor(heap: RankHeap) {
    this.#heap = heap;
  }

  /** `view`'s slice in its staged copy, placed by {@linkcode place}; `written`: the call's output. */
  slice(view: TypedArray, written: boolean): HeapSlice {
    const span = this.#spans.get(view.buffer) ?? { from: Infinity, to: 0, written: false };
    // Spans start 8-aligned, so every view keeps its alignment in the copy.
    span.from = Math.min(span.from, view.byteOffset - (view.byteOffset % 8));
    span.to = Math.max(span.to, view.byteOffset + view.byteLength);
    span.written ||= written;
    this.#spans.set(view.buffer, span);
    const slice = heapSlice(view);
    this.#views.push([view, slice]);
    return slice;
  }

  /** Copies every span into the heap and points its views' slices there. */
  place(): void {
    for (const [buffer, span] of this.#spans) {
      const bytes = span.to - span.from;
      const words = this.#heap.alloc("f64", Math.ceil(bytes / 8));
      span.copy = new Uint8Array(words.buffer, words.byteOffset, bytes);
      span.copy.set(new Uint8Array(buffer, span.from, bytes));
    }
    for (const [view, slice] of this.#views) {
      const span = this.#spans.get(view.buffer)!;
      slice.byteOffset = span.copy!.byteOffset + view.byteOffset - span.from;
    }
  }

  /** Copies the spans the call wrote back into their buffers and frees the copies. */
  done(): void {
    for (const [buffer, span] of this.#spans) {
      if (!span.copy) continue;
      if (span.written) new Uint8Array(buffer, span.from, span.copy.byteLength).set(span.copy);
      this.#heap.free(span.copy);
      span.copy = undefined;
    }
  }
}

/**
 * The buffer a call writes: a receive's and the one-buffer collectives' own (or their `out`),
 * the others' second; a send writes none.
 */
function outputOf(method: ProgressMethod, args: unknown[]): unknown {
  if (method === "send" || method === "barrier") return undefined;
  if (method === "recv" || method === "bcast") return args[0];
  if (method === "allreduce" || method === "reduce") {
    return (args[1] as { out?: unknown } | undefined)?.out ?? args[0];
  }
  return args[1];
}

/** `view`, which lies in the heap, as a slice of it. */
function heapSlice(view: TypedArray): HeapSlice {
  return {
    heapSlice: true,
    dtype: dtypeOf(view),
    byteOffset: view.byteOffset,
    length: view.length,
  };
}

/** The view `slice` names in `heap` (the progress thread's side). */
export function sliceView(heap: SharedArrayBuffer, slice: HeapSlice): TypedArray {
  return makeView(slice.dtype, heap, slice.byteOffset, slice.length);
}

/** Whether an argument is a slice of the heap. */
export function isHeapSlice(a: unknown): a is HeapSlice {
  return typeof a === "object" && a !== null && (a as HeapSlice).heapSlice === true;
}

function isTypedArray(a: unknown): a is TypedArray {
  return ArrayBuffer.isView(a) && !(a instanceof DataView);
}

function isOptions(a: unknown): a is { out?: unknown } {
  return typeof a === "object" && a !== null && !ArrayBuffer.isView(a) &&
    !(a instanceof CommBuffer);
}

/**
 * The transport the rank's side of a Communicator sees: what the group is (facts, rank, size, its
 * links), never a byte of it: the progress thread's transport carries those.
 */
function forwardedTransport(joined: ProgressJoined, facts: TransportFacts): Transport {
  const away = () => Promise.reject(new Error("a progress thread carries this rank's messages"));
  return {
    name: facts.name,
    facts,
    rank: joined.rank,
    size: joined.size,
    links: joined.links,
    members: joined.members,
    send: away,
    recv: away,
    probe: away,
    abort() {},
    close() {},
  };
}
