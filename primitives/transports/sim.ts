/**
 * The `sim` transport: `size` logical ranks in one thread, running the real algorithms over a
 * simulated network (sim_network.ts) under virtual clocks, so a group of 1024 ranks on a fabric
 * this machine does not have is timed as that fabric would time it (docs/transports/sim.md).
 * Real payloads are carried and checked like any transport's; phantom ones are sized only, and
 * every rank's buffers alias one untouched allocation, so 1024 ranks × 2^28 floats fit.
 * @module
 */

import { type CommError, CommTimeoutError, MismatchError, PeerFailedError } from "../errors.ts";
import type { HostArena } from "../memory/rank_memory.ts";
import {
  DONE,
  type Dtype,
  DTYPE_INFO,
  type LinkCosts,
  makeView,
  type TypedArray,
} from "../types.ts";
import { ClosingCheck, type Goodbye, type Unclaimed } from "./closing_check.ts";
import { type SimMember, type SimMessage, SimNetwork } from "./sim_network.ts";
import { checkModel, DEFAULT_MODEL, linkCostsOf, type SimModel } from "./sim_model.ts";
import type {
  CallCheck,
  Simulation,
  ThreadTransport,
  Transport,
  TransportFacts,
} from "./transport.ts";

/**
 * Messages and reductions of phantom runs below this size that touch none of the run's buffers
 * carry real bytes: the harness's own bookkeeping (agreed iteration counts, gathered timings).
 */
export const PHANTOM_MIN_BYTES = 64 * 1024;

interface PendingRecv {
  tag: number;
  into: Uint8Array;
  postedAt: number;
  resolve(stamp: number): void;
  reject(e: Error): void;
}

interface PendingProbe {
  peers: readonly number[];
  tag: number;
  postedAt: number;
  resolve(peer: number): void;
  reject(e: Error): void;
}

/** One logical rank of a simulated group. */
export class SimTransport implements Transport, SimMember {
  readonly name = "sim" as const;
  readonly facts: TransportFacts = SIM;
  readonly rank: number;
  readonly size: number;
  readonly hosts: readonly number[];
  links: LinkCosts;
  readonly simulated: Simulation;
  readonly #net: SimNetwork;
  readonly #timeoutMs: number;
  /** Arrived messages no receive took yet, by sender. */
  readonly #arrived = new Map<number, (SimMessage & { arrival: number })[]>();
  /** Posted receives no message matched yet, by sender. */
  readonly #posted = new Map<number, PendingRecv[]>();
  #probes: PendingProbe[] = [];
  /** Rejections of the waits matched but not yet complete (their completion is scheduled). */
  readonly #completing = new Set<(e: Error) => void>();
  #waiting = 0;
  /** Goodbyes that came while their senders' messages were still on their way. */
  readonly #byesBehind = new Map<number, Goodbye>();
  readonly #sent: Int32Array;
  readonly #taken: Int32Array;
  readonly #goodbyes: ClosingCheck;
  #calls?: CallCheck;
  #failed?: Error;
  /** Whether a message's bytes travel (all but a phantom run's sized-only ones). */
  readonly #carries: (data: Uint8Array) => boolean;

  /** Rank `rank` of the group on `net`, whose phantom buffers come from `arena`. */
  constructor(net: SimNetwork, rank: number, timeoutMs: number, arena: PhantomArena | undefined) {
    this.#net = net;
    this.rank = rank;
    this.size = net.size;
    this.hosts = net.hosts;
    this.links = linkCostsOf(net.model);
    this.#timeoutMs = timeoutMs;
    this.#sent = new Int32Array(net.size);
    this.#taken = new Int32Array(net.size);
    this.#goodbyes = new ClosingCheck(rank, net.size);
    const phantom = net.model.payload === "phantom";
    const phantomWork = (view: ArrayBufferView) =>
      phantom && (view.byteLength >= PHANTOM_MIN_BYTES || arena!.owns(view));
    const reduceUsPerByte = this.links.reduceUsPerByte;
    this.simulated = {
      model: net.model,
      arena,
      now: () => net.start(rank) / 1000,
      reduce: (dst, a, b) => {
        net.spend(rank, dst.byteLength * reduceUsPerByte);
        return phantomWork(dst) || phantomWork(a) || phantomWork(b);
      },
    };
    this.#carries = (data) => !phantomWork(data);
  }

  get calls(): CallCheck | undefined {
    return this.#calls;
  }

  set calls(calls: CallCheck | undefined) {
    this.#calls = calls;
    const problem = this.#goodbyes.attach(calls);
    if (problem) this.abort(problem);
  }

  get waiting(): number {
    return this.#waiting + this.#completing.size;
  }

  send(peer: number, data: Uint8Array, tag: number, stamp: number): Promise<void> {
    if (this.#failed) return Promise.reject(this.#failed);
    this.#sent[peer]++;
    const payload = this.#carries(data) ? data.slice() : undefined;
    this.#net.send({ src: this.rank, dst: peer, tag, stamp, bytes: data.byteLength, payload });
    return DONE;
  }

  recv(peer: number, into: Uint8Array, tag: number): Promise<number> {
    if (this.#failed) return Promise.reject(this.#failed);
    const postedAt = this.#net.start(this.rank);
    return new Promise((resolve, reject) => {
      const pending = { tag, into, postedAt, resolve, reject };
      const early = take(this.#arrived.get(peer), tag);
      if (early) return this.#match(pending, early, early.arrival);
      let list = this.#posted.get(peer);
      if (!list) this.#posted.set(peer, list = []);
      list.push(pending);
      this.#startWaiting();
    });
  }

  probe(peers: readonly number[], tag: number): Promise<number> {
    if (this.#failed) return Promise.reject(this.#failed);
    const postedAt = this.#net.start(this.rank);
    return new Promise((resolve, reject) => {
      const found = this.peek(peers, tag);
      if (found !== undefined) {
        const at = Math.max(
          postedAt,
          this.#arrived.get(found)!.find((m) => m.tag === tag)!.arrival,
        );
        return this.#completeAt(at + this.#net.model.overheadUs, () => resolve(found), reject);
      }
      this.#probes.push({ peers, tag, postedAt, resolve, reject });
      this.#startWaiting();
    });
  }

  peek(peers: readonly number[], tag: number): number | undefined {
    if (this.#failed) throw this.#failed;
    return peers.find((p) => this.#arrived.get(p)?.some((m) => m.tag === tag));
  }

  arrive(m: SimMessage, time: number): void {
    this.#deliver(m, time);
    const bye = this.#byesBehind.get(m.src);
    if (bye && !this.#failed && this.#onTheWay(m.src) === 0) {
      this.#byesBehind.delete(m.src);
      this.heardBye(m.src, bye);
    }
  }

  /** `m` arrived at `time`: it completes a posted receive or probe, or waits for one. */
  #deliver(m: SimMessage, time: number): void {
    const problem = this.#calls?.arrived(m.src, m.tag, m.stamp);
    if (problem) return this.abort(problem);
    const pending = take(this.#posted.get(m.src), m.tag);
    if (pending) {
      this.#waiting--;
      return this.#match(pending, m, time);
    }
    let list = this.#arrived.get(m.src);
    if (!list) this.#arrived.set(m.src, list = []);
    list.push({ ...m, arrival: time });
    const i = this.#probes.findIndex((p) => p.tag === m.tag && p.peers.includes(m.src));
    if (i < 0) return;
    const [probe] = this.#probes.splice(i, 1);
    this.#waiting--;
    const at = Math.max(probe.postedAt, time) + this.#net.model.overheadUs;
    this.#completeAt(at, () => probe.resolve(m.src), probe.reject);
  }

  /** Messages `peer` sent this rank that have not arrived: those it sent less those here. */
  #onTheWay(peer: number): number {
    const sent = (this.#net.members[peer] as SimTransport).#sent[this.rank];
    return sent - this.#taken[peer] - (this.#arrived.get(peer)?.length ?? 0);
  }

  /** One more wait: every rank may now wait, so the scheduler runs to judge a deadlock. */
  #startWaiting(): void {
    this.#waiting++;
    this.#net.kick();
  }

  /** Completes a matched wait at virtual time `at`, unless the group fails before. */
  #completeAt(at: number, complete: () => void, reject: (e: Error) => void): void {
    this.#completing.add(reject);
    this.#net.wake(this.rank, at, () => {
      if (this.#completing.delete(reject)) complete();
    });
  }

  /** A receive takes `m`, arrived at `arrival`: done o after both the post and the arrival. */
  #match(p: PendingRecv, m: SimMessage, arrival: number): void {
    if (m.bytes !== p.into.byteLength) {
      return p.reject(
        new MismatchError(
          `Rank ${this.rank} expected ${p.into.byteLength} bytes from rank ${m.src} (tag ${m.tag}) ` +
            `but rank ${m.src} sent ${m.bytes}: counts or dtypes differ between ranks`,
          { failedRank: m.src },
        ),
      );
    }
    if (m.payload) p.into.set(m.payload);
    this.#taken[m.src]++;
    const at = Math.max(p.postedAt, arrival) + this.#net.model.overheadUs;
    this.#completeAt(at, () => p.resolve(m.stamp), p.reject);
  }

  stuck(virtualUs: number): CommError | undefined {
    for (const [peer, list] of this.#posted) {
      if (list.length === 0) continue;
      const { tag } = list[0];
      if (this.#goodbyes.heardFrom(peer)) {
        return new PeerFailedError(peer, `rank ${peer} finished and closed its communicator`);
      }
      const stamp = this.#calls?.stampOf(tag);
      const peerCalls = (this.#net.members[peer] as SimTransport).calls;
      const problem = stamp === undefined ? undefined : peerCalls?.arrived(this.rank, tag, stamp);
      return problem ?? new CommTimeoutError(
        `Rank ${this.rank} waits for rank ${peer} (tag ${tag}) at virtual time ` +
          `${virtualUs.toFixed(1)} µs, and every rank waits with no message on its way`,
        { failedRank: peer },
      );
    }
    const probe = this.#probes[0];
    if (!probe) return undefined;
    return new CommTimeoutError(
      `Rank ${this.rank} waits for a message from any of ranks ${probe.peers.join(", ")}, and ` +
        `every rank waits with no message on its way`,
      { failedRank: probe.peers.length === 1 ? probe.peers[0] : undefined },
    );
  }

  abort(error: CommError): void {
    this.#net.abort(error);
  }

  fail(error: Error): void {
    this.#failed ??= error;
    for (const list of this.#posted.values()) for (const p of list.splice(0)) p.reject(error);
    for (const p of this.#probes.splice(0)) p.reject(error);
    for (const reject of this.#completing) reject(error);
    this.#completing.clear();
    this.#waiting = 0;
    this.#goodbyes.interrupt();
  }

  /**
   * `peer` closed its communicator having made the calls `bye` sums up; heard once its messages
   * on their way here have arrived, as a socket's goodbye comes behind its data.
   */
  heardBye(peer: number, bye: Goodbye): void {
    if (this.#onTheWay(peer) > 0) return void this.#byesBehind.set(peer, bye);
    const problem = this.#goodbyes.heard(peer, bye, this.#sent[peer]);
    if (problem) this.abort(problem);
  }

  /**
   * Says goodbye to every other rank and waits for theirs (closing_check.ts); rejects with what
   * that finds, or with the failure that ended the group.
   */
  async close(): Promise<void> {
    if (!this.#failed) {
      for (let peer = 0; peer < this.size; peer++) {
        if (peer === this.rank) continue;
        (this.#net.members[peer] as SimTransport).heardBye(
          this.rank,
          this.#goodbyes.to(this.#taken[peer]),
        );
      }
      this.#net.closed(this.rank);
      await this.#goodbyes.wait(this.#timeoutMs, () => this.#failed !== undefined);
      const problem = this.#failed
        ? undefined
        : this.#goodbyes.closing(this.#unclaimed(), Array.from(this.#sent));
      if (problem) {
        this.abort(problem);
        throw problem;
      }
    } else this.#net.closed(this.rank);
    if (this.#failed) throw this.#failed;
  }

  #unclaimed(): Unclaimed | undefined {
    for (const [peer, list] of this.#arrived) {
      if (list.length > 0) return { peer, tag: list[0].tag, stamp: list[0].stamp };
    }
    return undefined;
  }
}

/** Takes the first entry of `list` with `tag`. */
function take<T extends { tag: number }>(list: T[] | undefined, tag: number): T | undefined {
  if (!list) return undefined;
  const i = list.findIndex((e) => e.tag === tag);
  return i < 0 ? undefined : list.splice(i, 1)[0];
}

/**
 * Where a phantom run's buffers live: every rank's k-th live buffer of a size is the same
 * untouched allocation (the operating system maps its pages only where something writes), so
 * the group's buffers cost one rank's address space and almost no memory.
 */
export class PhantomArena implements HostArena {
  /** Allocations by byte length, each a list shared by the ranks. */
  readonly #bySize = new Map<number, ArrayBuffer[]>();
  /** Each rank's live buffers of each size. */
  readonly #live = new Map<string, Set<ArrayBuffer>>();
  readonly #buffers = new WeakSet<ArrayBufferLike>();

  /** A view of `count` × `dtype` for `rank`: its own among its live buffers, shared across ranks. */
  alloc(rank: number, dtype: Dtype, count: number): TypedArray {
    const bytes = count * DTYPE_INFO[dtype].bytes;
    const list = this.#bySize.get(bytes) ?? [];
    this.#bySize.set(bytes, list);
    const key = `${rank}:${bytes}`;
    const live = this.#live.get(key) ?? new Set();
    this.#live.set(key, live);
    let buffer = list.find((b) => !live.has(b));
    if (!buffer) {
      buffer = new ArrayBuffer(bytes);
      this.#buffers.add(buffer);
      list.push(buffer);
    }
    live.add(buffer);
    return makeView(dtype, buffer, 0, count);
  }

  /** `rank` is done with `view`. */
  free(rank: number, view: ArrayBufferView): void {
    this.#live.get(`${rank}:${view.buffer.byteLength}`)?.delete(view.buffer as ArrayBuffer);
  }

  /** Whether `view` lies in the arena. */
  owns(view: ArrayBufferView): boolean {
    return this.#buffers.has(view.buffer);
  }
}

/** The `sim` transport: logical ranks over a simulated network (see `TransportFacts`). */
export const SIM: ThreadTransport & { name: "sim" } = {
  name: "sim",
  summary: "logical ranks in one thread over a simulated network (virtual time; --hosts, --link…)",
  launch: "thread",
  memory: ["host", "shared"],
  bestMemory: "host",
  offers: ["messages"],
  needsDevice: false,
  blocking: false,
  rankBytes: 256 * 1024,
  groupBytes: () => 0,
  bounds: { latency: "socket", bandwidth: "loopback" },
  maxRanks: 4096,
  simulated: true,
  // Without a model (a group started like any other's), one-rank hosts of the default fabric.
  group({ size, timeoutMs, options }) {
    const model = checkModel(
      (options as SimModel | undefined) ?? { ...DEFAULT_MODEL, hosts: size, perHost: 1 },
    );
    if (model.hosts * model.perHost !== size) {
      throw new RangeError(
        `sim model: ${model.hosts} hosts × ${model.perHost} ranks is not the group's ${size} ranks`,
      );
    }
    const net = new SimNetwork(model);
    const arena = model.payload === "phantom" ? new PhantomArena() : undefined;
    const ranks = Array.from(
      { length: size },
      (_, r) => new SimTransport(net, r, timeoutMs, arena),
    );
    net.members = ranks;
    return ranks;
  },
};
