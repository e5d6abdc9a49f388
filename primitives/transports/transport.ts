/**
 * The transport contract: ordered, tagged point-to-point byte messages between ranks, and nothing
 * about collectives (gloo's transport/algorithm split).
 * @module
 */

import type { DeviceView } from "../../kernels/gpu_kernels.ts";
import type { CommError, MismatchError } from "../errors.ts";
import type { GpuDevice } from "../memory/gpu_device.ts";
import type { RankHeap } from "../memory/heap.ts";
import type { HostArena } from "../memory/rank_memory.ts";
import type { SimModel } from "./sim_model.ts";
import type {
  AlgorithmNeed,
  Dtype,
  KernelOp,
  LinkCosts,
  MemoryKind,
  Side,
  TypedArray,
} from "../types.ts";
import { DEVICE_MEMORY } from "../types.ts";

/**
 * Judges whether what arrives from a peer belongs to the call this rank makes (implemented by the
 * communicator, which knows the calls; transports carry stamps without reading them).
 */
export interface CallCheck {
  /**
   * A message from `peer` with `tag` and the sender's `stamp` started to arrive: the error if it
   * cannot belong to this rank's call with that tag (the transport then aborts), else undefined.
   */
  arrived(peer: number, tag: number, stamp: number): CommError | undefined;
  /**
   * This rank's stamp for its call with `tag`, if it has begun one: a receive that stalls sends
   * it to the awaited peer (a probe), which judges it with `arrived`. Ranks that disagree so that
   * no message ever crosses between them (roots, say) still meet this way.
   */
  stampOf(tag: number): number | undefined;
  /** The error for a peer that arrived at a shared-memory exchange with another stamp. */
  mismatch(peer: number, mine: number, theirs: number): MismatchError;
  /** A stamp as text, for timeout messages. */
  describe(stamp: number): string;
  /** What this rank tells its peers when it closes. */
  summary(): CallSummary;
  /**
   * `peer` closed after the calls its `summary` describes: the error if that already contradicts
   * this rank's calls (it made more, or as many other ones), else undefined; this rank's later
   * calls are judged against it too, and {@linkcode CallCheck.closing} once it closes.
   */
  peerClosed(peer: number, summary: CallSummary): MismatchError | undefined;
  /** This rank closes: the error if its calls differ from those of any peer that closed. */
  closing(): MismatchError | undefined;
  /** The error for a message `peer` sent that no call of this rank took before both closed. */
  unclaimed(peer: number, tag: number, stamp: number): MismatchError;
}

/**
 * What a closing rank tells its peers: how many collective calls it made and a digest of their
 * stamps in order. Ranks whose summaries differ made different calls.
 */
export interface CallSummary {
  /** Collective calls it made. */
  calls: number;
  /** An unsigned 32-bit digest. */
  digest: number;
  /** The stamp of the last call (0 before the first). */
  last: number;
}

/**
 * Moves bytes between two ranks. Messages from one peer with one tag arrive in the order they
 * were sent. `send` and `recv` post their request before they first yield, so
 * `Promise.all([send(...), recv(...)])` between two ranks never deadlocks, whatever the size.
 * Every message carries the sender's call stamp (primitives/communicator/stamp.ts) to the receiver unread, and
 * a receive that stalls probes its peer with this rank's stamp ({@linkcode CallCheck.stampOf}).
 * A receive whose length differs from the message rejects with a `MismatchError`.
 */
export interface Transport {
  /** Registry name (its descriptor's). */
  readonly name: string;
  /** Its descriptor's facts: what `auto`, the argument checks and the launchers decide by. */
  readonly facts: TransportFacts;
  /** This rank. */
  readonly rank: number;
  /** Number of ranks. */
  readonly size: number;
  /** Sends `data` to `peer` with the sender's call `stamp`; resolves when `data` may be reused. */
  send(peer: number, data: Uint8Array, tag: number, stamp: number): Promise<void>;
  /**
   * Receives the next message from `peer` with `tag` into `into`, which must be its exact length;
   * resolves with the sender's stamp.
   */
  recv(peer: number, into: Uint8Array, tag: number): Promise<number>;
  /**
   * Resolves with the first of `peers` that has a message with `tag` waiting (arrived or
   * arriving, and not claimed by a posted receive), so that a receive from it takes that message:
   * MPI_Probe over a set of sources, for receives from any rank. Rejects after the timeout
   * without a message from any of them.
   */
  probe(peers: readonly number[], tag: number): Promise<number>;
  /**
   * The first of `peers` with a message of `tag` waiting now, without waiting: what a
   * hierarchical group asks its host's transport before it probes the other hosts.
   */
  peek?(peers: readonly number[], tag: number): number | undefined;
  /** Direct access to peers' heaps, when ranks share memory (`shm`). */
  readonly shared?: SharedAccess;
  /** Collective access to every rank's device buffers, when ranks share a device (`gpu`). */
  readonly device?: DeviceAccess;
  /** The two levels of a hierarchical group (ranks of a host sharing memory; hosts linked). */
  readonly hierarchy?: HierarchyAccess;
  /**
   * Each rank's host as an index, where the transport knows where its ranks run (the stream
   * transports, from the rendezvous); ranks with equal indices share a machine.
   */
  readonly hosts?: readonly number[];
  /** What the links between hosts cost, once measured (`calibrateLinks`); `auto` picks by it. */
  links?: LinkCosts;
  /** What each rank is, where a group mixes Deno processes and browser tabs (`websocket`). */
  readonly members?: readonly RankKind[];
  /** Whether its waits block the thread, where it differs from its descriptor's fact. */
  readonly blocking?: boolean;
  /**
   * Resolves once what it has sent has left this thread, where its sends need the event loop
   * (`websocket`): a hierarchical group's shm level, whose waits block the thread, waits for it.
   */
  flush?(): Promise<void>;
  /** Checks arrivals against this rank's calls; set by the communicator. */
  calls?: CallCheck;
  /** What a simulated transport adds (`sim`): its virtual clock, and the work it charges. */
  readonly simulated?: Simulation;
  /**
   * Makes every pending and future operation reject with `error` and tells the peers (where the
   * transport can) that `error.failedRank` failed, so they fail fast too. Idempotent.
   */
  abort(error: CommError): void;
  /** Releases the transport's resources; resolves once peers have been told (if they must be). */
  close(): void | Promise<void>;
}

/**
 * What a simulated transport's ranks run under: a virtual clock that the network's model advances
 * (sim_network.ts), and reductions charged to it at the model's rate; with phantom payloads
 * (buffers sized only), the reductions' work is skipped.
 */
export interface Simulation {
  /** The network simulated. */
  readonly model: SimModel;
  /** Where a phantom run's host buffers come from. */
  readonly arena?: HostArena;
  /** This rank's virtual clock, ms (performance.now's unit). */
  now(): number;
  /**
   * Charges a reduction into `dst` to this rank's clock; true when its operands are phantom and
   * the work is to be skipped.
   */
  reduce(dst: TypedArray, a: TypedArray, b: TypedArray): boolean;
}

/**
 * What a shared-memory transport offers direct algorithms: every rank can see every other rank's
 * heap. Calls are collective (every rank makes the same calls in the same order) and blocking.
 * Each one is an arrival that carries the caller's call `stamp`; a peer that arrives with another
 * stamp makes it throw `MismatchError` on every rank.
 */
export interface SharedAccess {
  /**
   * Publishes `view` and returns every rank's published view, indexed by rank, once all ranks have
   * published; `undefined` for ranks whose view is not in their heap. Throws `MismatchError` when
   * dtypes or lengths differ between ranks (lengths only unless `anyLength`: a call with per-rank
   * counts publishes blocks of its own length).
   */
  exchangeViews(view: TypedArray, stamp: number, anyLength?: boolean): (TypedArray | undefined)[];
  /**
   * Copies `view` (at most {@linkcode eagerBytes}) into this rank's eager slot and returns every
   * rank's slot once all have arrived. Slots stay valid until the next-but-one call.
   */
  eagerExchange(view: TypedArray, stamp: number): TypedArray[];
  /**
   * {@linkcode exchangeViews} and {@linkcode eagerExchange} in one arrival: publishes `view`, and
   * copies the small `beside` (the same dtype and length on every rank) into this rank's eager
   * slot; returns every rank's view and every rank's slot. A `beside` past
   * {@linkcode eagerBytes} lies in the heap and takes an arrival of its own. With `inSlot`, a
   * `view` that fits the slot beside `beside` ({@linkcode fitsSlot}) is copied there instead,
   * and its peers get that copy, valid as an eager slot is; `inSlot` in the result says every
   * rank's came that way, so no peer reads this rank's heap and the call needs no closing barrier.
   * The result and its arrays stay valid until the next-but-one arrival, as the slots do.
   */
  exchangeViewsBeside(
    view: TypedArray,
    beside: TypedArray,
    stamp: number,
    anyLength?: boolean,
    inSlot?: boolean,
  ): { views: (TypedArray | undefined)[]; besides: TypedArray[]; inSlot: boolean };
  /** Whether {@linkcode exchangeViewsBeside} copies `view` beside `beside` in its slot. */
  fitsSlot(view: TypedArray, beside: TypedArray): boolean;
  /** Largest payload of {@linkcode eagerExchange}. */
  readonly eagerBytes: number;
  /**
   * Starts a pipelined call (bcast and reduce up to {@linkcode pipeBytes}): writers copy their
   * data into a slot and return without waiting for their readers, so back-to-back calls overlap
   * like MPI's eager sends. Every rank begins every pipelined call, in the same order; ranks
   * that disagree fail with `MismatchError` when they read, at the next arrival, or at close.
   */
  pipeBegin(stamp: number): void;
  /** Copies `view` into this rank's slot of the current pipelined call for `reader` (or all). */
  pipeWrite(view: TypedArray, reader?: number): void;
  /** `writer`'s slot of the current pipelined call viewed like `like`, once written. */
  pipeRead(writer: number, like: TypedArray): TypedArray;
  /** Ends a pipelined call this rank read slots in: it is done with all of them. */
  pipeEnd(): void;
  /** Largest payload of a pipelined call. */
  readonly pipeBytes: number;
  /** Blocks until every rank has arrived. */
  barrier(stamp: number): void;
}

/**
 * What a device transport offers device algorithms: every rank's buffers on one device. Calls are
 * collective: each rank joins with its own arguments, and the last to join records the whole
 * call, for every rank, into the device's command encoder. Completion is NCCL's: a call returns
 * once recorded; the work runs in order with everything recorded before, and
 * `Communicator.synchronize()` waits for it.
 */
export interface DeviceAccess {
  /**
   * Joins a collective call: once every rank has joined with the same stamp, `record` runs once
   * with every rank's `args`, by rank; resolves for every rank then. A rank that joins with
   * another stamp makes every rank reject with `MismatchError`.
   */
  join<A>(stamp: number, args: A, record: (all: A[], device: DeviceOps) => void): Promise<void>;
  /** Sends a device buffer to `peer` (a copy into its receive, once it posts one). */
  send(peer: number, view: DeviceView, tag: number, stamp: number): Promise<void>;
  /** Receives `peer`'s next device message with `tag` into `view`; resolves with its stamp. */
  recv(peer: number, view: DeviceView, tag: number): Promise<number>;
  /** {@linkcode Transport.probe} for device messages. */
  probe(peers: readonly number[], tag: number): Promise<number>;
}

/** What a device algorithm records (kernels/gpu_kernels.ts, on the shared device). */
export interface DeviceOps {
  /** `outs[m] = ins[0] op ins[1] op …`, or accumulated into the single output. */
  reduce(op: KernelOp, outs: DeviceView[], ins: DeviceView[], accumulate?: boolean): void;
  /** Copies `src` into `dst`. */
  copy(src: DeviceView, dst: DeviceView): void;
  /** Device scratch of rank `rank`: `count` × `dtype`, reused (different slots never overlap). */
  scratch(rank: number, dtype: Dtype, count: number, slot?: number): DeviceView;
}

/**
 * A hierarchical group: `hosts` processes (or hosts) of `threads` ranks each, rank
 * `host × threads + local`. Hierarchical algorithms work in two levels: among the ranks of this
 * host, which share memory, and over this rank's channel, the ranks with its local index on every
 * host (NCCL's channels: every local rank drives its own share of the links between hosts).
 */
export interface HierarchyAccess {
  /** Processes (or hosts) in the group. */
  readonly hosts: number;
  /** Ranks per process. */
  readonly threads: number;
  /** This rank's host. */
  readonly host: number;
  /** This rank's index among its host's ranks. */
  readonly local: number;
  /** The ranks of this host, numbered 0 … threads−1 (with `shared` access). */
  readonly group: Transport;
  /** This rank's channel: the ranks with its local index, numbered by host. */
  readonly channel: Transport;
}

/**
 * The side a buffer of `memory` is used on over a transport with `facts`: device memory on the
 * device, host memory on the host, and managed memory wherever the transport's algorithms work (on
 * the device where ranks share one, on the host copy elsewhere, as a CPU touching managed memory
 * would).
 */
export function sideOfMemory(facts: TransportFacts, memory: MemoryKind): Side {
  if (memory === "gpu") return "device";
  if (memory === "managed" && facts.offers.includes("device")) return "device";
  return "host";
}

/** Whether ranks of a transport with `facts` and buffers of `memory` need a WebGPU device. */
export function needsDevice(facts: TransportFacts, memory: MemoryKind): boolean {
  return facts.needsDevice || DEVICE_MEMORY.includes(memory);
}

/** The bytes of a typed array, without copying. */
export function bytesOf(view: ArrayBufferView): Uint8Array {
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}

/** An algorithm's one-host bound as a transport restates it (`TransportFacts.winsBelow`). */
export interface RestatedBound {
  /** The algorithm's descriptor (collectives/<collective>_<name>.ts). */
  readonly algorithm: { readonly name: string; readonly collective: string };
  /** This transport's bound at `size` ranks, from the algorithm's own (`measured`). */
  bound(size: number, measured: number): number;
}

/**
 * What dccl knows about a transport besides moving bytes (NCCL's `ncclTransport`): its facts, how
 * its ranks start and connect, and any crossovers of `auto` it measured otherwise. Each
 * transport's file exports one; the registries list them in order, and nothing else names a
 * transport.
 */
export interface TransportFacts {
  /** Registry name (`--transport`). */
  readonly name: string;
  /** How its ranks start: workers of this process, processes (or hosts), or one thread. */
  readonly launch: "workers" | "processes" | "thread";
  /** One line for help texts: what links the ranks. */
  readonly summary: string;
  /** Memory kinds it carries (NCCL's `canConnect`), directly or staged through the host. */
  readonly memory: readonly MemoryKind[];
  /** The kind a run uses unless told (docs/design.md). */
  readonly bestMemory: MemoryKind;
  /** What it offers algorithms (each algorithm states what it needs). */
  readonly offers: readonly AlgorithmNeed[];
  /** Whether its ranks need a WebGPU device whatever their memory. */
  readonly needsDevice: boolean;
  /**
   * Whether its waits block the rank's thread (shared-memory spins and sleeps): a collective that
   * runs on after its call returns must then finish before the next one begins.
   */
  readonly blocking: boolean;
  /** Memory a rank costs beyond its buffers (its runtime), bytes; measured on the development machine. */
  readonly rankBytes: number;
  /** Memory a whole group shares, bytes. */
  groupBytes(size: number): number;
  /**
   * Algorithms' one-host bounds measured otherwise on this transport, each keyed by the
   * algorithm's descriptor (so renaming one breaks the build, not the rule): the bound gets the
   * group's size and the algorithm's own bound (`Facts.winsBelow`) and says this transport's.
   */
  readonly winsBelow?: readonly RestatedBound[];
  /** Which of the machine's limits bound it (bench/limits: `deno task limits`). */
  readonly bounds: TransportBounds;
  /** Most ranks a group may have, where more than the tasks' usual 256 (a simulated group). */
  readonly maxRanks?: number;
  /** Whether browser tabs may be its ranks beside processes (`--tabs`: websocket.ts). */
  readonly joinsTabs?: boolean;
  /** Whether its ranks run under a simulated network's virtual clocks (`Transport.simulated`). */
  readonly simulated?: boolean;
}

/**
 * The machine's limits that bound a transport: the round trip no handoff between its ranks can
 * beat, and the bandwidth no transfer can (docs/measuring.md, "The machine's limits").
 */
export interface TransportBounds {
  /**
   * `cacheLine`: a cache line between two workers through shared memory; `postMessage`: a message
   * between two workers; `socket`: 4 bytes over loopback TCP through socket calls; `device`: a
   * submit to the GPU and its completion.
   */
  readonly latency: "cacheLine" | "postMessage" | "socket" | "device";
  /**
   * `memory`: a core's copy (or reduce) rate, shared among the ranks; `loopback`: one TCP
   * connection's stream; `device`: a copy between device buffers.
   */
  readonly bandwidth: "memory" | "loopback" | "device";
}

/** A transport whose ranks are workers of the launching process. */
export interface WorkersTransport extends TransportFacts {
  /** Its ranks are workers of the launching process. */
  readonly launch: "workers";
  /** In the launcher, once per group: what its ranks share. */
  prepare(size: number): PreparedGroup;
  /** In rank `rank`'s worker: its transport, from what the launcher prepared. */
  join(rank: number, joining: WorkersJoin): Transport;
}

/** What a rank of a workers transport joins with. */
export interface WorkersJoin {
  /** What the launcher handed this rank (`PreparedGroup.forRank`). */
  handed: unknown;
  /** Every rank's heap memory, by rank. */
  heaps: WebAssembly.Memory[];
  /** This rank's heap. */
  heap: RankHeap;
  /** Milliseconds a wait may go without progress. */
  timeoutMs: number;
  /**
   * The group-wide rank of each rank, when this group is one host's part of a larger group
   * (hierarchy.ts): messages and errors name those. @default {the ranks themselves}
   */
  ids?: readonly number[];
  /** Ranks this machine runs in all, when more than this group's. @default {the group's size} */
  machineRanks?: number;
}

/** What a workers transport's launcher made for one group. */
export interface PreparedGroup {
  /** What rank `rank` is handed (structured-cloned), and what of it is transferred. */
  forRank(rank: number): { handed: unknown; transfer: Transferable[] };
  /** Tells every rank, from the launcher, that `failedRank` failed (beside the launcher's message). */
  abort?(failedRank: number, reason: string): void;
}

/** Where a rank of a processes transport meets the others (the rendezvous at rank 0). */
export interface MeshOptions {
  /** This rank. */
  rank: number;
  /** Ranks in the group. */
  size: number;
  /** Rank 0's host, as the other ranks reach it. */
  masterAddr: string;
  /** Rank 0's rendezvous port. */
  masterPort: number;
  /** The run's shared secret; every connection must present it. */
  token: string;
  /** Address this rank listens on. @default {"127.0.0.1"} */
  bind?: string;
  /** Milliseconds for the whole rendezvous, and each later wait. @default {30000} */
  timeoutMs?: number;
  /** Called with the port this rank listens on, once it listens (for `masterPort` 0). */
  onListening?: (port: number) => void;
  /**
   * The peers this rank keeps connections with (all unless told: a hierarchical group links only
   * ranks on other hosts). Every rank still meets rank 0 at rendezvous.
   */
  linked?: (peer: number) => boolean;
}

/** A rank of a mixed group: a Deno process, or a browser tab. */
export type RankKind = "process" | "tab";

/** A transport whose ranks are processes (or hosts) that meet at a rendezvous. */
export interface ProcessesTransport extends TransportFacts {
  /** Its ranks are processes (or hosts). */
  readonly launch: "processes";
  /** Connects this rank to the others. */
  connect(options: MeshOptions): Promise<Transport>;
}

/** A transport whose ranks are logical ranks in one thread, sharing one device. */
export interface ThreadTransport extends TransportFacts {
  /** Its ranks are logical ranks in one thread. */
  readonly launch: "thread";
  /** The transports of a group, by rank. */
  group(init: ThreadGroupInit): Transport[];
}

/** What a thread transport's group is made with. */
export interface ThreadGroupInit {
  /** Ranks in the group. */
  size: number;
  /** Milliseconds a wait may go without progress. */
  timeoutMs: number;
  /** The device the ranks share, where the transport or their memory needs one. */
  gpu?: GpuDevice;
  /** What the transport is configured with (the `sim` transport's model). */
  options?: unknown;
}

/** One transport's descriptor (see {@linkcode TransportFacts}). */
export type TransportDescriptor = WorkersTransport | ProcessesTransport | ThreadTransport;

/**
 * What the transports of processes (`ws`, `tcp`, `websocket`) share: one process per rank,
 * messages between them.
 */
export const PROCESS_MESH = {
  launch: "processes",
  memory: ["host", "shared", "gpu", "managed"],
  bestMemory: "host",
  offers: ["messages", "staging"],
  needsDevice: false,
  blocking: false,
  rankBytes: 80 * 2 ** 20,
  groupBytes: () => 0,
  bounds: { latency: "socket", bandwidth: "loopback" },
} as const satisfies Partial<ProcessesTransport>;
