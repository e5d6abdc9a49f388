/**
 * The receive side shared by message transports (`worker`, `ws`, `tcp`): segments of tagged messages
 * arrive in order per peer and are matched to posted receives (copied straight in) or kept as
 * unexpected messages until one is posted. Also detects length mismatches and receive timeouts.
 * A message is judged (`InboxHooks.check`) as it starts to arrive, and an unexpected one again
 * when a receive claims it.
 * @module
 */

import { type CommError, CommTimeoutError, MismatchError } from "../errors.ts";
import type { Unclaimed } from "./closing_check.ts";
import { platform } from "../platform.ts";

/**
 * One piece of a message: `data` goes at `offset` of a `total`-byte message with `tag`, sent by
 * a call with `stamp`.
 */
export interface Segment {
  tag: number;
  stamp: number;
  total: number;
  offset: number;
  data: Uint8Array;
}

interface PendingRecv {
  tag: number;
  into: Uint8Array;
  received: number;
  stamp: number;
  /** Whether the peer was probed for it. */
  probed?: boolean;
  resolve: (stamp: number) => void;
  reject: (e: Error) => void;
}

interface PendingProbe {
  peers: readonly number[];
  tag: number;
  since: number;
  resolve: (peer: number) => void;
  reject: (e: Error) => void;
}

interface Arrival {
  tag: number;
  stamp: number;
  data: Uint8Array;
  received: number;
  waiter?: PendingRecv;
}

/** A promise's settling functions, which first run `onSettled` when given. */
function settling<T>(
  resolve: (value: T) => void,
  reject: (e: Error) => void,
  onSettled?: () => void,
): { resolve: (value: T) => void; reject: (e: Error) => void } {
  if (!onSettled) return { resolve, reject };
  return {
    resolve: (value) => {
      onSettled();
      resolve(value);
    },
    reject: (e) => {
      onSettled();
      reject(e);
    },
  };
}

/** Judges a message that starts to arrive; returns the error that aborts the transport, if any. */
export type ArrivalCheck = (peer: number, tag: number, stamp: number) => CommError | undefined;

/** Milliseconds a receive waits without data before its peer is probed (see `CallCheck`). */
export const STALL_PROBE_MS = 200;

/** What an inbox calls on its transport. */
export interface InboxHooks {
  /** Judges each message as it starts to arrive, and again when a receive claims it early. */
  check: ArrivalCheck;
  /** Aborts the transport with a problem `check` found. */
  abort(error: CommError): void;
  /** A receive of `tag` from `peer` has waited {@linkcode STALL_PROBE_MS} without data. */
  stalled(peer: number, tag: number): void;
  /**
   * Sends the rest of the message arriving from `peer` into `into` from now on, at the same
   * offset, if it can (not while a read into the old buffer is in flight); says whether it did.
   * For transports that write payloads in place themselves ({@linkcode Inbox.begin}); without it
   * the inbox places every segment ({@linkcode Inbox.deliver}).
   */
  retarget?(peer: number, into: Uint8Array): boolean;
}

/** Matches arriving segments to receives for one rank. */
export class Inbox {
  readonly rank: number;
  #posted: PendingRecv[][];
  #arrivals: Arrival[][];
  /** The message currently arriving from each peer. */
  #current: (Arrival | PendingRecv | undefined)[];
  /** When each peer was last heard from (data, or a receive from it posted), as the watchdog saw. */
  #lastData: number[];
  /**
   * Peers heard from since the watchdog's last look: it stamps their clock then, so a message
   * costs a store instead of a clock reading (timeouts and stall probes are judged per tick).
   */
  #heard: boolean[];
  #timeoutMs: number;
  #failed?: Error;
  /** Peers that closed their end gracefully: what they sent is still delivered, nothing more. */
  #closed: (Error | undefined)[];
  #probes: PendingProbe[] = [];
  #watchdog: ReturnType<typeof setInterval>;
  #hooks: InboxHooks;
  #delivered = 0;
  #unexpectedBytes = 0;
  /** Messages from each peer that a receive took. */
  readonly #taken: number[];

  /**
   * An inbox for `rank` of `size`; receives reject after `timeoutMs` without data. Every message
   * goes through `hooks.check` as it starts to arrive.
   */
  constructor(rank: number, size: number, timeoutMs: number, hooks: InboxHooks) {
    this.rank = rank;
    this.#hooks = hooks;
    this.#posted = Array.from({ length: size }, () => []);
    this.#arrivals = Array.from({ length: size }, () => []);
    this.#current = new Array(size).fill(undefined);
    this.#lastData = new Array(size).fill(performance.now());
    this.#heard = new Array(size).fill(false);
    this.#timeoutMs = timeoutMs;
    this.#closed = new Array(size).fill(undefined);
    this.#taken = new Array(size).fill(0);
    this.#watchdog = setInterval(
      () => this.#checkTimeouts(),
      Math.min(STALL_PROBE_MS / 2, timeoutMs / 4),
    );
    platform.unrefTimer(this.#watchdog);
  }

  /**
   * Receives the next message from `peer` with `tag` into `into`; resolves with its stamp.
   * `onSettled` runs at once when it settles (for transports that poll until it does).
   */
  post(peer: number, into: Uint8Array, tag: number, onSettled?: () => void): Promise<number> {
    return new Promise((resolve, reject) => {
      const settle = settling(resolve, reject, onSettled);
      if (this.#failed) return settle.reject(this.#failed);
      const pending: PendingRecv = { tag, into, received: 0, stamp: 0, ...settle };
      const early = this.#arrivals[peer].find((a) => a.tag === tag && !a.waiter);
      if (!early) {
        if (this.#closed[peer]) return settle.reject(this.#closed[peer]);
        this.#posted[peer].push(pending);
        this.#heard[peer] = true; // its wait starts now
        return;
      }
      // Judged again now that this rank's call has begun: a message that arrived before the
      // communicator attached its call check (a peer already running) was never judged.
      const problem = this.#hooks.check(peer, tag, early.stamp);
      if (problem) {
        this.#hooks.abort(problem);
        return settle.reject(this.#failed ?? problem);
      }
      if (
        early === this.#current[peer] && early.data.byteLength === into.byteLength &&
        (this.#hooks.retarget?.(peer, into) ?? true)
      ) {
        this.#claimInFlight(peer, early, pending);
        return;
      }
      early.waiter = pending;
      this.#settleArrival(peer, early);
    });
  }

  /**
   * A receive claims the message still arriving from `peer`, whose rest now goes straight into
   * it (`InboxHooks.retarget`): what arrived so far is copied, as if it had been posted first.
   * (A peer that runs ahead starts its next large message while this rank finishes its own
   * send; without this, all of it would land in a buffer of its own and be copied again.)
   */
  #claimInFlight(peer: number, early: Arrival, pending: PendingRecv): void {
    const list = this.#arrivals[peer];
    list.splice(list.indexOf(early), 1);
    pending.into.set(early.data.subarray(0, early.received));
    pending.received = early.received;
    pending.stamp = early.stamp;
    this.#current[peer] = pending;
  }

  /**
   * Resolves with the first of `peers` with an unclaimed message of `tag` (see
   * `Transport.probe`); `onSettled` as for {@linkcode post}.
   */
  /**
   * The first of `peers` with a message of `tag` waiting that no receive has claimed, now; throws
   * the failure that ended the inbox.
   */
  peek(peers: readonly number[], tag: number): number | undefined {
    if (this.#failed) throw this.#failed;
    return peers.find((p) => this.#arrivals[p].some((a) => a.tag === tag && !a.waiter));
  }

  probe(peers: readonly number[], tag: number, onSettled?: () => void): Promise<number> {
    return new Promise((resolve, reject) => {
      const settle = settling(resolve, reject, onSettled);
      if (this.#failed) return settle.reject(this.#failed);
      const waiting = peers.find((p) => this.#arrivals[p].some((a) => a.tag === tag && !a.waiter));
      if (waiting !== undefined) return settle.resolve(waiting);
      if (peers.every((p) => this.#closed[p])) return settle.reject(this.#closed[peers[0]]!);
      this.#probes.push({ peers, tag, since: performance.now(), ...settle });
    });
  }

  /** Takes one segment from `peer` (segments of one message arrive contiguously, in order). */
  deliver(peer: number, seg: Segment): void {
    const target = seg.offset === 0
      ? this.begin(peer, seg.tag, seg.stamp, seg.total)
      : this.#targetOf(this.#current[peer]);
    if (!target) return;
    target.set(seg.data, seg.offset);
    this.advance(peer, seg.data.byteLength);
  }

  /**
   * A `total`-byte message with `tag` and the sender's `stamp` starts to arrive from `peer`:
   * returns where its bytes go (the posted receive's buffer, or one of its own until a receive
   * is posted). Report the bytes written there with {@linkcode advance}, also when none are yet
   * (it marks the peer as active).
   */
  begin(peer: number, tag: number, stamp: number, total: number): Uint8Array {
    const problem = this.#hooks.check(peer, tag, stamp);
    if (problem) this.#hooks.abort(problem);
    const posted = this.#posted[peer];
    const i = posted.findIndex((p) => p.tag === tag);
    let cur: Arrival | PendingRecv;
    if (i >= 0) {
      cur = posted.splice(i, 1)[0];
      cur.stamp = stamp;
      if (cur.into.byteLength !== total) {
        cur.reject(this.#mismatch(peer, tag, cur.into.byteLength, total));
        cur = { tag, stamp, data: new Uint8Array(total), received: 0 }; // drained, dropped
      }
    } else {
      cur = { tag, stamp, data: new Uint8Array(total), received: 0 };
      this.#unexpectedBytes += total;
      this.#arrivals[peer].push(cur);
      this.#answerProbes(peer, tag);
    }
    this.#current[peer] = cur;
    return this.#targetOf(cur)!;
  }

  /** Messages that have completed a posted receive so far. */
  get delivered(): number {
    return this.#delivered;
  }

  /**
   * Bytes of the messages that began to arrive before their receive was posted (MPI's unexpected
   * messages): each went into a buffer of its own and is copied out when claimed.
   */
  get unexpectedBytes(): number {
    return this.#unexpectedBytes;
  }

  /** `bytes` more bytes of `peer`'s current message are in place; the last settle it. */
  advance(peer: number, bytes: number): void {
    this.#heard[peer] = true;
    const cur = this.#current[peer];
    if (!cur) return;
    cur.received += bytes;
    if (cur.received < this.#targetOf(cur)!.byteLength) return;
    this.#current[peer] = undefined;
    if ("into" in cur) {
      this.#delivered++;
      this.#taken[peer]++;
      cur.resolve(cur.stamp);
    } else this.#settleArrival(peer, cur);
  }

  #targetOf(cur: Arrival | PendingRecv | undefined): Uint8Array | undefined {
    return cur && ("into" in cur ? cur.into : cur.data);
  }

  /** Rejects every pending and future receive with `error`. */
  fail(error: Error): void {
    if (this.#failed) return;
    this.#failed = error;
    for (const list of this.#posted) for (const p of list.splice(0)) p.reject(error);
    for (const list of this.#arrivals) for (const a of list) a.waiter?.reject(error);
    for (const cur of this.#current) if (cur && "into" in cur) cur.reject(error);
    for (const p of this.#probes.splice(0)) p.reject(error);
  }

  /**
   * `peer` will send nothing more (it closed its end after finishing): receives from it that no
   * arrived message can satisfy reject with `error`.
   */
  closePeer(peer: number, error: Error): void {
    this.#closed[peer] = error;
    for (const p of this.#posted[peer].splice(0)) p.reject(error);
    const hopeless = this.#probes.filter((p) => p.peers.every((q) => this.#closed[q]));
    for (const p of hopeless) {
      this.#probes.splice(this.#probes.indexOf(p), 1);
      p.reject(error);
    }
  }

  /** Messages from `peer` that a receive took. */
  taken(peer: number): number {
    return this.#taken[peer];
  }

  /** The first message that arrived (or is arriving) with no receive to take it, if any. */
  unclaimed(): Unclaimed | undefined {
    for (let peer = 0; peer < this.#arrivals.length; peer++) {
      const a = this.#arrivals[peer].find((a) => !a.waiter);
      if (a) return { peer, tag: a.tag, stamp: a.stamp };
    }
    return undefined;
  }

  /** Stops the timeout watchdog. */
  close(): void {
    clearInterval(this.#watchdog);
  }

  /** A message of `tag` from `peer` started to arrive unclaimed: the first probe for it learns. */
  #answerProbes(peer: number, tag: number): void {
    const i = this.#probes.findIndex((p) => p.tag === tag && p.peers.includes(peer));
    if (i >= 0) this.#probes.splice(i, 1)[0].resolve(peer);
  }

  #settleArrival(peer: number, a: Arrival): void {
    const waiter = a.waiter;
    if (!waiter || a.received < a.data.byteLength) return;
    const list = this.#arrivals[peer];
    list.splice(list.indexOf(a), 1);
    if (a.data.byteLength !== waiter.into.byteLength) {
      waiter.reject(this.#mismatch(peer, a.tag, waiter.into.byteLength, a.data.byteLength));
    } else {
      waiter.into.set(a.data);
      this.#taken[peer]++;
      waiter.resolve(a.stamp);
    }
  }

  #mismatch(peer: number, tag: number, expected: number, got: number): MismatchError {
    return new MismatchError(
      `Rank ${this.rank} expected ${expected} bytes from rank ${peer} (tag ${tag}) but rank ` +
        `${peer} sent ${got}: counts or dtypes differ between ranks`,
      { failedRank: peer },
    );
  }

  #checkTimeouts(): void {
    const now = performance.now();
    for (let peer = 0; peer < this.#heard.length; peer++) {
      if (!this.#heard[peer]) continue;
      this.#lastData[peer] = now;
      this.#heard[peer] = false;
    }
    for (let peer = 0; peer < this.#posted.length; peer++) {
      const waiting = this.#posted[peer].length > 0 ||
        this.#arrivals[peer].some((a) => a.waiter) || this.#current[peer] !== undefined;
      if (!waiting) continue;
      const idle = now - this.#lastData[peer];
      if (idle > STALL_PROBE_MS) {
        for (const p of this.#posted[peer]) {
          if (!p.probed) this.#hooks.stalled(peer, p.tag);
          p.probed = true;
        }
      }
      if (idle <= this.#timeoutMs) continue;
      const error = new CommTimeoutError(
        `Rank ${this.rank} timed out after ${this.#timeoutMs} ms waiting for rank ${peer}`,
        { failedRank: peer },
      );
      for (const p of this.#posted[peer].splice(0)) p.reject(error);
      for (const a of this.#arrivals[peer]) a.waiter?.reject(error);
      const cur = this.#current[peer];
      if (cur && "into" in cur) cur.reject(error);
    }
    for (const p of [...this.#probes]) {
      // Silent for the timeout: the probe started that long ago and no peer of it sent since.
      const last = Math.max(p.since, ...p.peers.map((q) => this.#lastData[q]));
      if (now - last <= this.#timeoutMs) continue;
      this.#probes.splice(this.#probes.indexOf(p), 1);
      p.reject(
        new CommTimeoutError(
          `Rank ${this.rank} timed out after ${this.#timeoutMs} ms waiting for a message from ` +
            `any of ranks ${p.peers.join(", ")}`,
          { failedRank: p.peers.length === 1 ? p.peers[0] : undefined },
        ),
      );
    }
  }
}
