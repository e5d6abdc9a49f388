/**
 * The shared side of the `gpu` transport's logical ranks (gpu.ts): collective calls that ranks
 * join (the last to join records the whole call for every rank into the device's encoder) and
 * device messages whose two ends meet, with the scratch they share.
 * @module
 */

import type { DeviceView } from "../../kernels/gpu_kernels.ts";
import {
  type CommError,
  CommTimeoutError,
  failureNotice,
  MismatchError,
  PeerFailedError,
} from "../errors.ts";
import type { GpuDevice } from "../memory/gpu_device.ts";
import { platform } from "../platform.ts";
import { DEFAULT_TIMEOUT_MS, type Dtype, DTYPE_INFO } from "../types.ts";
import type { CallCheck, DeviceOps } from "./transport.ts";

/** What the group asks of one rank's side. */
export interface GpuMember {
  /** The rank's calls, to describe and check what it joins. */
  readonly calls?: CallCheck;
  /** Fails the rank's host messages (the group failed). */
  fail(error: Error): void;
}

/** A collective call while ranks join it. */
interface Join {
  stamps: number[];
  args: unknown[];
  joined: number;
  record?: (all: unknown[], device: DeviceOps) => void;
  settle: { resolve: () => void; reject: (e: Error) => void }[];
  timer?: ReturnType<typeof setTimeout>;
}

/**
 * One end of a device message while the two ends meet: a send completes when its receive takes
 * it (as MPI_Ssend does; the copy between them is recorded then), and either end waiting longer
 * than the timeout fails, naming the other.
 */
interface Transfer {
  view: DeviceView;
  stamp: number;
  settle: { resolve: (stamp: number) => void; reject: (e: Error) => void };
  timer?: ReturnType<typeof setTimeout>;
}

/** A rank waiting for a device message from any of `peers`. */
interface Probe {
  to: number;
  peers: readonly number[];
  tag: number;
  resolve: (peer: number) => void;
  reject: (e: Error) => void;
  timer: ReturnType<typeof setTimeout>;
}

/** The ranks of one device: their pending joins and transfers, and shared scratch. */
export class GpuGroup {
  /** The device every rank uses. */
  readonly gpu: GpuDevice;
  /** Each rank's side, by rank (set once the ranks exist). */
  members: GpuMember[] = [];
  readonly #size: number;
  readonly #timeoutMs: number;
  /** Pending joins by sequence number (each rank joins calls in its own order, counted). */
  readonly #joins = new Map<number, Join>();
  /** Pending sends and receives by `from:to:tag`. */
  readonly #sends = new Map<string, Transfer[]>();
  readonly #recvs = new Map<string, Transfer[]>();
  readonly #probes: Probe[] = [];
  readonly #scratch = new Map<string, DeviceView>();
  /** Ranks that closed their communicators. */
  readonly #closed = new Set<number>();
  readonly #ops: DeviceOps;
  #failed: CommError | undefined;

  /** A group of `size` ranks on `gpu`; waits reject after `timeoutMs` without progress. */
  constructor(gpu: GpuDevice, size: number, options: { timeoutMs?: number } = {}) {
    this.gpu = gpu;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#size = size;
    this.#ops = {
      reduce: (op, outs, ins, accumulate) =>
        gpu.kernels.reduce(gpu.encoder(), op, outs, ins, accumulate),
      copy: (src, dst) => gpu.kernels.copy(gpu.encoder(), src, dst),
      scratch: (rank, dtype, count, slot = 0) => this.#scratchView(rank, dtype, count, slot),
    };
  }

  /** Rank `rank` joins its `seq`-th call (see `DeviceAccess.join`). */
  join<A>(
    rank: number,
    seq: number,
    stamp: number,
    args: A,
    record: (all: A[], device: DeviceOps) => void,
  ): Promise<void> {
    if (this.#failed) return Promise.reject(this.#failed);
    const size = this.#size;
    let join = this.#joins.get(seq);
    if (!join) {
      join = { stamps: [], args: [], joined: 0, settle: [] };
      this.#joins.set(seq, join);
    }
    join.stamps[rank] = stamp;
    join.args[rank] = args;
    join.record = record as Join["record"];
    join.joined++;
    const done = new Promise<void>((resolve, reject) => join.settle.push({ resolve, reject }));
    if (join.joined < size) {
      this.#watch(seq, join);
      return done;
    }
    clearTimeout(join.timer);
    this.#joins.delete(seq);
    const odd = join.stamps.findIndex((s) => s !== join.stamps[0]);
    if (odd >= 0) {
      // Every rank learns whom it disagrees with.
      join.settle.forEach(({ reject }, r) => {
        const peer = join.stamps[r] === join.stamps[0] ? odd : 0;
        const calls = this.members[r].calls;
        reject(
          calls?.mismatch(peer, join.stamps[r], join.stamps[peer]) ??
            new MismatchError(`Rank ${r} and rank ${peer} are in different calls`),
        );
      });
      return done;
    }
    try {
      join.record!(join.args, this.#ops);
      join.settle.forEach(({ resolve }) => resolve());
    } catch (e) {
      join.settle.forEach(({ reject }) => reject(e as Error));
    }
    return done;
  }

  /** Rank `from` sends `view` to rank `to`. */
  send(from: number, to: number, view: DeviceView, tag: number, stamp: number): Promise<void> {
    return this.#transfer(this.#sends, this.#recvs, `${from}:${to}:${tag}`, view, stamp)
      .then(() => {});
  }

  /** Rank `to` receives rank `from`'s next device message with `tag` into `view`. */
  recv(to: number, from: number, view: DeviceView, tag: number): Promise<number> {
    return this.#transfer(this.#recvs, this.#sends, `${from}:${to}:${tag}`, view, 0);
  }

  /** Rank `to` learns the first of `peers` with a device message of `tag` waiting for it. */
  probe(to: number, peers: readonly number[], tag: number): Promise<number> {
    if (this.#failed) return Promise.reject(this.#failed);
    const ready = peers.find((p) => (this.#sends.get(`${p}:${to}:${tag}`)?.length ?? 0) > 0);
    if (ready !== undefined) return Promise.resolve(ready);
    return new Promise((resolve, reject) => {
      const probe: Probe = {
        to,
        peers,
        tag,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.#probes.splice(this.#probes.indexOf(probe), 1);
          reject(
            new CommTimeoutError(
              `Rank ${to} timed out after ${this.#timeoutMs} ms waiting for a message from any ` +
                `of ranks ${peers.join(", ")}`,
            ),
          );
        }, this.#timeoutMs),
      };
      this.#probes.push(probe);
    });
  }

  /**
   * Rank `rank` closed its communicator: a device message sent to it that no receive took, and a
   * receive waiting for one from it, fail (naming it; the sender may have closed first).
   */
  closed(rank: number): void {
    this.#closed.add(rank);
    this.#failStale();
  }

  /** Fails the device messages whose other end has closed (see {@linkcode GpuGroup.closed}). */
  #failStale(): void {
    const fail = (list: Map<string, Transfer[]>, gone: "from" | "to") => {
      for (const [key, transfers] of list) {
        const [from, to, tag] = key.split(":").map(Number);
        const closed = gone === "to" ? to : from;
        if (!this.#closed.has(closed)) continue;
        list.delete(key);
        const error = new MismatchError(
          `Rank ${to} closed its communicator without receiving the device message (tag ${tag}) ` +
            `rank ${from} sent it: every message must be received`,
          { failedRank: closed },
        );
        for (const t of transfers) settleWith(t, error);
      }
    };
    fail(this.#sends, "to");
    fail(this.#recvs, "from");
  }

  /** Fails every pending and later call of every rank (idempotent). */
  abort(error: CommError): void {
    if (this.#failed) return;
    this.#failed = error;
    for (const join of this.#joins.values()) {
      clearTimeout(join.timer);
      join.settle.forEach(({ reject }) => reject(error));
    }
    this.#joins.clear();
    for (const list of [...this.#sends.values(), ...this.#recvs.values()]) {
      for (const t of list) settleWith(t, error);
    }
    this.#sends.clear();
    this.#recvs.clear();
    for (const p of this.#probes.splice(0)) {
      clearTimeout(p.timer);
      p.reject(error);
    }
    const { failedRank, reason } = failureNotice(error, 0);
    for (const t of this.members) t.fail(new PeerFailedError(failedRank, reason));
  }

  /**
   * Matches one end of a device message with the other end's queue: the first of each meets,
   * their copy is recorded, and both resolve (the receive with the sender's stamp).
   */
  #transfer(
    mine: Map<string, Transfer[]>,
    theirs: Map<string, Transfer[]>,
    key: string,
    view: DeviceView,
    stamp: number,
  ): Promise<number> {
    if (this.#failed) return Promise.reject(this.#failed);
    return new Promise((resolve, reject) => {
      const me: Transfer = { view, stamp, settle: { resolve, reject } };
      const other = theirs.get(key)?.shift();
      if (!other) {
        mine.set(key, [...(mine.get(key) ?? []), me]);
        this.#expire(mine, key, me);
        if (mine === this.#sends) this.#answerProbe(key);
        if (this.#closed.size > 0) this.#failStale();
        return;
      }
      clearTimeout(other.timer);
      const [send, recv] = mine === this.#sends ? [me, other] : [other, me];
      const bytes = (t: Transfer) => t.view.length * DTYPE_INFO[t.view.dtype].bytes;
      if (bytes(send) !== bytes(recv)) {
        const [from, to] = key.split(":");
        const error = new MismatchError(
          `Rank ${to} expected ${bytes(recv)} bytes from rank ${from} but rank ${from} sent ` +
            `${bytes(send)}: counts or dtypes differ between ranks`,
          { failedRank: Number(from) },
        );
        send.settle.reject(error);
        return recv.settle.reject(error);
      }
      this.gpu.kernels.copy(this.gpu.encoder(), send.view, recv.view);
      send.settle.resolve(0);
      recv.settle.resolve(send.stamp);
    });
  }

  /** Fails `me`, waiting in `mine` under `key`, if its other end has not come by the timeout. */
  #expire(mine: Map<string, Transfer[]>, key: string, me: Transfer): void {
    me.timer = setTimeout(() => {
      const waiting = mine.get(key) ?? [];
      const at = waiting.indexOf(me);
      if (at < 0) return;
      waiting.splice(at, 1);
      const [from, to, tag] = key.split(":").map(Number);
      const sending = mine === this.#sends;
      me.settle.reject(
        new CommTimeoutError(
          sending
            ? `Rank ${from} timed out after ${this.#timeoutMs} ms waiting for rank ${to} to ` +
              `receive its device message (tag ${tag})`
            : `Rank ${to} timed out after ${this.#timeoutMs} ms waiting for a device message ` +
              `(tag ${tag}) from rank ${from}`,
          { failedRank: sending ? to : from },
        ),
      );
    }, this.#timeoutMs);
    platform.unrefTimer(me.timer);
  }

  /** A send is waiting under `key`: the first probe of its receiver for it learns. */
  #answerProbe(key: string): void {
    const [from, to, tag] = key.split(":").map(Number);
    const i = this.#probes.findIndex((p) => p.to === to && p.tag === tag && p.peers.includes(from));
    if (i < 0) return;
    const [probe] = this.#probes.splice(i, 1);
    clearTimeout(probe.timer);
    probe.resolve(from);
  }

  /** Rejects a join whose ranks stop arriving for the timeout, naming the first missing one. */
  #watch(seq: number, join: Join): void {
    clearTimeout(join.timer);
    join.timer = setTimeout(() => {
      if (this.#joins.get(seq) !== join) return;
      this.#joins.delete(seq);
      const missing = this.members.findIndex((_, r) => join.stamps[r] === undefined);
      const error = new CommTimeoutError(
        `Ranks timed out after ${this.#timeoutMs} ms waiting for rank ${missing} to join ` +
          this.members[0].calls?.describe(join.stamps.find((s) => s !== undefined)!),
        { failedRank: missing },
      );
      join.settle.forEach(({ reject }) => reject(error));
    }, this.#timeoutMs);
    platform.unrefTimer(join.timer);
  }

  #scratchView(rank: number, dtype: Dtype, count: number, slot: number): DeviceView {
    const key = `${rank}:${dtype}:${slot}`;
    let view = this.#scratch.get(key);
    if (!view || view.length < count) {
      if (view) this.gpu.retire(view.buffer);
      const length = Math.max(count, 1024, 2 * (view?.length ?? 0));
      const { buffer, id } = this.gpu.createBuffer(length * DTYPE_INFO[dtype].bytes);
      view = { buffer, id, byteOffset: 0, length, dtype };
      this.#scratch.set(key, view);
    }
    return { ...view, length: count };
  }
}

/** Fails a waiting end of a device message with `error`. */
function settleWith(t: Transfer, error: Error): void {
  clearTimeout(t.timer);
  t.settle.reject(error);
}
