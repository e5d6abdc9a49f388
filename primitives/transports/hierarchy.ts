/**
 * A hierarchical group (`--threads T`, nccl-tests' `-t`): each process (or host) runs `threads`
 * ranks as workers that share memory over `shm`, and the processes link over a stream transport
 * (`tcp`, `ws`). Rank `host × threads + local` sends to a rank of its own host through the shm
 * rings and to any other over the stream mesh, which links only ranks on different hosts; so
 * every flat algorithm runs on the group as it is. Hierarchical algorithms use the two levels
 * directly ({@linkcode HierarchyAccess}).
 * @module
 */

import { type CommError, CommTimeoutError } from "../errors.ts";
import { DEFAULT_TIMEOUT_MS, type LinkCosts } from "../types.ts";
import type { RankHeap } from "../memory/heap.ts";
import type {
  CallCheck,
  HierarchyAccess,
  MeshOptions,
  RankKind,
  Transport,
  TransportFacts,
  WorkersTransport,
} from "./transport.ts";

/** A transport that can say, without waiting, which peer has a message of a tag waiting. */
export type PeekingTransport = Transport & Required<Pick<Transport, "peek">>;

/** Where one rank of a hierarchical group stands, and how its levels connect. */
export interface HierarchyJoin {
  hosts: number;
  threads: number;
  host: number;
  local: number;
  /** The workers transport the host's ranks share memory over (the transport table's). */
  intraHost: WorkersTransport;
  /** What the host's launcher prepared for this rank of that transport, and every local heap. */
  handed: unknown;
  heaps: WebAssembly.Memory[];
  heap: RankHeap;
  /** Ranks this machine runs in all, when the launcher knows (see `WorkersJoin`). */
  machineRanks?: number;
  /** The group's rendezvous (rank and size are the group's, filled in here). */
  mesh: Omit<MeshOptions, "rank" | "size" | "linked">;
  /** Connects the stream mesh (the processes transport's `connect`). */
  connect(options: MeshOptions): Promise<Transport>;
}

/** Joins rank `host × threads + local` of a hierarchical group. */
export async function joinHierarchy(j: HierarchyJoin): Promise<HierarchyTransport> {
  const { threads, host, local } = j;
  const timeoutMs = j.mesh.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const ids = Array.from({ length: threads }, (_, t) => host * threads + t);
  // The mesh first: rank 0 may still be telling its host's other ranks where it listens, and
  // joining the host's group blocks until all of them have.
  const remote = peeking(
    await j.connect({
      ...j.mesh,
      rank: host * threads + local,
      size: j.hosts * threads,
      linked: (peer) => Math.floor(peer / threads) !== host,
    }),
  );
  // The mesh says how big the group is: a mixed group's tabs are hosts its processes add to.
  const hosts = remote.size / threads;
  const { handed, heaps, heap, machineRanks } = j;
  const group = peeking(
    j.intraHost.join(local, { handed, heaps, heap, timeoutMs, ids, machineRanks }),
  );
  if (!group.shared) {
    throw new TypeError(`Transport ${group.name} gives no shared access: a host's ranks need it`);
  }
  return new HierarchyTransport(group, remote, hosts, threads, host, local, timeoutMs);
}

/** `transport`, which a hierarchical group must be able to peek into. */
function peeking(transport: Transport): PeekingTransport {
  if (!canPeek(transport)) {
    throw new TypeError(`Transport ${transport.name} cannot peek: a hierarchical group needs it`);
  }
  return transport;
}

function canPeek(transport: Transport): transport is PeekingTransport {
  return transport.peek !== undefined;
}

/** One rank of a hierarchical group (see the module docs). */
export class HierarchyTransport implements Transport {
  readonly name: string;
  readonly facts: TransportFacts;
  readonly rank: number;
  readonly size: number;
  readonly blocking = true; // the shm level's waits block the thread
  readonly hierarchy: HierarchyAccess;
  readonly #group: PeekingTransport;
  readonly #remote: PeekingTransport;
  readonly #threads: number;
  readonly #base: number;
  readonly #timeoutMs: number;
  #calls?: CallCheck;
  /**
   * Where the stream mesh's sends need the event loop: settles once those sent so far have left
   * and the local calls held for them have started (none held: undefined).
   */
  #held?: Promise<void>;

  /** Rank `local` of host `host`: its host's `group` and the stream mesh to other hosts. */
  constructor(
    group: PeekingTransport,
    remote: PeekingTransport,
    hosts: number,
    threads: number,
    host: number,
    local: number,
    timeoutMs = DEFAULT_TIMEOUT_MS,
  ) {
    this.name = remote.name;
    this.facts = remote.facts;
    this.rank = remote.rank;
    this.size = remote.size;
    this.#group = group;
    this.#remote = remote;
    this.#threads = threads;
    this.#base = host * threads;
    this.#timeoutMs = timeoutMs;
    this.hierarchy = {
      hosts,
      threads,
      host,
      local,
      group,
      channel: new ChannelTransport(remote, hosts, threads, host, local, (sent) => this.#out(sent)),
    };
  }

  get hosts(): readonly number[] | undefined {
    return this.#remote.hosts;
  }

  /** What every rank is (a mixed group's, hosts of processes and tabs). */
  get members(): readonly RankKind[] | undefined {
    return this.#remote.members;
  }

  /** The links between hosts are the stream mesh's. */
  get links(): LinkCosts | undefined {
    return this.#remote.links;
  }

  set links(links: LinkCosts | undefined) {
    this.#remote.links = links;
  }

  get calls(): CallCheck | undefined {
    return this.#calls;
  }

  set calls(calls: CallCheck | undefined) {
    this.#calls = calls;
    this.#remote.calls = calls;
    this.#group.calls = calls && hostCalls(calls, this.#base);
  }

  send(peer: number, data: Uint8Array, tag: number, stamp: number): Promise<void> {
    const local = this.#localOf(peer);
    return local === undefined
      ? this.#out(this.#remote.send(peer, data, tag, stamp))
      : this.#inHost(() => this.#group.send(local, data, tag, stamp));
  }

  recv(peer: number, into: Uint8Array, tag: number): Promise<number> {
    const local = this.#localOf(peer);
    return local === undefined
      ? this.#remote.recv(peer, into, tag)
      : this.#inHost(() => this.#group.recv(local, into, tag));
  }

  /**
   * A send to another host, done once it has left this thread where the mesh needs the event
   * loop for that: the shm level's calls wait for it meanwhile, since their waits block the
   * thread (and with it the loop).
   */
  #out(sent: Promise<void>): Promise<void> {
    const flush = this.#remote.flush;
    if (!flush) return sent;
    const out = sent.then(() => flush.call(this.#remote));
    this.#hold(Promise.all([this.#held, out]).then(() => {}, () => {}));
    return out;
  }

  /** A call of the shm level: at once, or once what holds it has settled, in the order issued. */
  #inHost<T>(call: () => Promise<T>): Promise<T> {
    if (!this.#held) return call();
    let called!: Promise<T>;
    this.#hold(this.#held.then(() => void (called = call())));
    return this.#held.then(() => called);
  }

  #hold(until: Promise<void>): void {
    this.#held = until;
    until.then(() => this.#held === until && (this.#held = undefined));
  }

  /**
   * The first of `peers` with a message of `tag` waiting. Peers of one level wait in that level's
   * probe; peers of both are polled in turn (a receive from any rank is rare on a hierarchical
   * group, and the shm level's waits would block the stream level's reads).
   */
  async probe(peers: readonly number[], tag: number): Promise<number> {
    const locals = peers.filter((p) => this.#localOf(p) !== undefined);
    const remotes = peers.filter((p) => this.#localOf(p) === undefined);
    if (remotes.length === 0) {
      return this.#base + await this.#group.probe(locals.map((p) => p - this.#base), tag);
    }
    if (locals.length === 0) return this.#remote.probe(remotes, tag);
    const deadline = performance.now() + this.#timeoutMs;
    for (;;) {
      const local = this.#group.peek(locals.map((p) => p - this.#base), tag);
      if (local !== undefined) return this.#base + local;
      const remote = this.#remote.peek(remotes, tag);
      if (remote !== undefined) return remote;
      if (performance.now() > deadline) {
        throw new CommTimeoutError(
          `Rank ${this.rank} timed out after ${this.#timeoutMs} ms waiting for a message ` +
            `(tag ${tag}) from any of ranks ${peers.join(", ")}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
  }

  abort(error: CommError): void {
    this.#group.abort(error);
    this.#remote.abort(error);
  }

  /** Says goodbye on both levels (each judges its own peers); rejects with the first problem. */
  async close(): Promise<void> {
    let problem: unknown;
    try {
      await this.#remote.close();
    } catch (e) {
      problem = e;
      this.#group.abort(e as CommError);
    }
    try {
      this.#group.close();
    } catch (e) {
      problem ??= e;
    }
    if (problem !== undefined) throw problem;
  }

  /** `peer`'s index on this host, or undefined when it is on another. */
  #localOf(peer: number): number | undefined {
    const local = peer - this.#base;
    return local >= 0 && local < this.#threads ? local : undefined;
  }
}

/**
 * The calls of a group-wide rank as its host's shm group sees them: the shm group numbers its
 * ranks 0 … threads−1, the checks name them by their group-wide rank.
 */
function hostCalls(calls: CallCheck, base: number): CallCheck {
  return {
    arrived: (peer, tag, stamp) => calls.arrived(base + peer, tag, stamp),
    stampOf: (tag) => calls.stampOf(tag),
    mismatch: (peer, mine, theirs) => calls.mismatch(base + peer, mine, theirs),
    describe: (stamp) => calls.describe(stamp),
    summary: () => calls.summary(),
    peerClosed: (peer, summary) => calls.peerClosed(base + peer, summary),
    closing: () => calls.closing(),
    unclaimed: (peer, tag, stamp) => calls.unclaimed(base + peer, tag, stamp),
  };
}

/**
 * One rank's channel: the ranks with its local index on every host, numbered by host, over the
 * stream mesh. Messages carry the call's tag and stamp as any other; the group's calls judge them.
 */
class ChannelTransport implements Transport {
  readonly name: string;
  readonly facts: TransportFacts;
  readonly rank: number;
  readonly size: number;
  readonly #remote: Transport;
  readonly #threads: number;
  readonly #local: number;
  readonly #out: (sent: Promise<void>) => Promise<void>;

  /** `out` makes a send done once it has left (see `HierarchyTransport`). */
  constructor(
    remote: Transport,
    hosts: number,
    threads: number,
    host: number,
    local: number,
    out: (sent: Promise<void>) => Promise<void>,
  ) {
    this.name = remote.name;
    this.facts = remote.facts;
    this.rank = host;
    this.size = hosts;
    this.#remote = remote;
    this.#threads = threads;
    this.#local = local;
    this.#out = out;
  }

  /** What `auto` prices the channel's algorithms by: the links between hosts. */
  get links(): LinkCosts | undefined {
    return this.#remote.links;
  }

  send(peer: number, data: Uint8Array, tag: number, stamp: number): Promise<void> {
    return this.#out(this.#remote.send(peer * this.#threads + this.#local, data, tag, stamp));
  }

  recv(peer: number, into: Uint8Array, tag: number): Promise<number> {
    return this.#remote.recv(peer * this.#threads + this.#local, into, tag);
  }

  async probe(peers: readonly number[], tag: number): Promise<number> {
    const rank = await this.#remote.probe(peers.map((p) => p * this.#threads + this.#local), tag);
    return Math.floor(rank / this.#threads);
  }

  abort(error: CommError): void {
    this.#remote.abort(error);
  }

  close(): void {
    // The group's transport closes the mesh.
  }
}
