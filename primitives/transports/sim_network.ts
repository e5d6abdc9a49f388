/**
 * The simulated network behind the `sim` transport: every rank's virtual clock, the ports messages
 * queue on, and the discrete-event scheduler that delivers them. Ranks run their real code in
 * this thread; the scheduler lets them run to their next wait (a macrotask: every microtask has
 * run), then fires the next batch of events in time order. A batch spans less than o (the
 * per-message overhead), the least virtual time between a rank's wake-up and anything it starts,
 * and wakes each rank at most once, so what ranks start between batches never lands before an
 * event already fired (conservative simulation with a lookahead of o).
 * @module
 */

import { type CommError, CommTimeoutError } from "../errors.ts";
import { EventQueue, type SimEvent } from "./sim_events.ts";
import { type SimModel, usPerByte } from "./sim_model.ts";

/** A message on its way: what the receiving rank matches and copies. */
export interface SimMessage {
  src: number;
  dst: number;
  tag: number;
  stamp: number;
  bytes: number;
  /** The bytes, when carried (real payloads, and phantom runs' small bookkeeping). */
  payload?: Uint8Array;
}

/** What the network asks of each rank's transport. */
export interface SimMember {
  /** `m` arrived whole at virtual time `time`. */
  arrive(m: SimMessage, time: number): void;
  /** Rejects every pending operation with `error` (the group failed). */
  fail(error: Error): void;
  /** Receives and probes this rank waits in, matched or not. */
  readonly waiting: number;
  /** What keeps this rank waiting when nothing can come: the error that names who it waits for. */
  stuck(virtualUs: number): CommError | undefined;
}

/** Empty batches in a row, with every rank waiting, before the scheduler calls it a deadlock. */
const IDLE_DRAINS = 3;
/**
 * Drains in a row that may pass while a rank is still running (its code crosses macrotasks)
 * before the next batch fires anyway: firing early would bring its clock up to the batch's.
 */
const BUSY_DRAINS = 3;

/** Which ports a message crosses and what they cost. */
interface Path {
  ports: number[];
  latencyUs: number;
}

/** The simulated network of one group (see the module docs). */
export class SimNetwork {
  readonly model: SimModel;
  readonly size: number;
  /** Each rank's host. */
  readonly hosts: readonly number[];
  /** Each rank's virtual clock, µs. */
  readonly clock: Float64Array;
  /** The ranks' transports, by rank (set once they exist). */
  members: SimMember[] = [];
  readonly #queue = new EventQueue();
  /** When each port is free again, µs: ranks' send and receive ports, hosts', leaves' uplinks. */
  readonly #free: Float64Array;
  /** µs per byte on each port. */
  readonly #usPerByte: Float64Array;
  readonly #woken: Uint32Array;
  readonly #closed: Uint8Array;
  #batch = 0;
  /** The start of the last batch: no rank acts before it. */
  #now = 0;
  #running = false;
  #failed?: Error;
  #channel?: MessageChannel;
  #resume?: () => void;
  /** Events fired, for the speed figures. */
  events = 0;

  /** The network of `model` (hosts × perHost ranks). */
  constructor(model: SimModel) {
    this.model = model;
    this.size = model.hosts * model.perHost;
    this.hosts = Array.from({ length: this.size }, (_, r) => Math.floor(r / model.perHost));
    this.clock = new Float64Array(this.size);
    this.#woken = new Uint32Array(this.size);
    this.#closed = new Uint8Array(this.size);
    const leaves = model.fabric.kind === "tree"
      ? Math.ceil(model.hosts / model.fabric.hostsPerLeaf)
      : 0;
    const ports = 2 * this.size + 2 * model.hosts + 2 * leaves;
    this.#free = new Float64Array(ports);
    this.#usPerByte = new Float64Array(ports);
    this.#usPerByte.fill(usPerByte(model.intra), 0, 2 * this.size);
    this.#usPerByte.fill(usPerByte(model.inter), 2 * this.size, 2 * (this.size + model.hosts));
    if (model.fabric.kind === "tree") {
      const { hostsPerLeaf, oversubscription } = model.fabric;
      const uplink = { ...model.inter, gbps: (hostsPerLeaf * model.inter.gbps) / oversubscription };
      this.#usPerByte.fill(usPerByte(uplink), 2 * (this.size + model.hosts));
    }
  }

  /** Virtual µs no rank acts before: where a rank that worked outside the simulation resumes. */
  get now(): number {
    return this.#now;
  }

  /** The failure that ended the group, if any. */
  get failed(): Error | undefined {
    return this.#failed;
  }

  /** Rank `rank` acts now: its clock, brought up to the scheduler's if it fell behind. */
  start(rank: number): number {
    if (this.clock[rank] < this.#now) this.clock[rank] = this.#now;
    return this.clock[rank];
  }

  /** Rank `rank` spends `us` of its CPU (a reduction, say). */
  spend(rank: number, us: number): void {
    this.clock[rank] = this.start(rank) + us;
  }

  /** Rank `src` sends `m`: its CPU pays o, then the message leaves. */
  send(m: SimMessage): void {
    const t = this.start(m.src) + this.model.overheadUs;
    this.clock[m.src] = t;
    this.#queue.push(t, () => this.#inject(m, t));
    this.kick();
  }

  /** Runs `fire` at virtual time `time`, as a wake-up of `rank` (it resolves one of its waits). */
  wake(rank: number, time: number, fire: () => void): void {
    this.#queue.push(time, fire, rank);
    this.kick();
  }

  /** Rank `rank` closed: it waits for nothing any more. */
  closed(rank: number): void {
    this.#closed[rank] = 1;
    if (this.#closed.every((c) => c === 1)) this.#stop();
  }

  /** Fails every rank with `error`. */
  abort(error: Error): void {
    if (this.#failed) return;
    this.#failed = error;
    this.#queue.clear();
    for (const m of this.members) m.fail(error);
    this.#stop();
  }

  /** Makes sure the scheduler runs. */
  kick(): void {
    if (this.#running || this.#failed) return;
    this.#running = true;
    this.#loop();
  }

  async #loop(): Promise<void> {
    let idle = 0, busy = 0;
    while (!this.#failed) {
      await this.#ranksWait();
      if (this.#failed) break;
      const allWaiting = this.#allWaiting();
      if (this.#queue.size === 0) {
        // A rank working outside the simulation (writing a file) starts it again when it acts.
        if (!allWaiting) break;
        if (++idle < IDLE_DRAINS) continue;
        this.#deadlock();
        break;
      }
      idle = 0;
      if (!allWaiting && ++busy < BUSY_DRAINS) continue;
      busy = 0;
      this.#fireBatch();
    }
    this.#running = false;
  }

  /** Resolves once every rank that can run has run to its next wait (after every microtask). */
  #ranksWait(): Promise<void> {
    if (!this.#channel) {
      this.#channel = new MessageChannel();
      this.#channel.port1.onmessage = () => this.#resume?.();
    }
    return new Promise((resolve) => {
      this.#resume = resolve;
      this.#channel!.port2.postMessage(0);
    });
  }

  #stop(): void {
    this.#channel?.port1.close();
    this.#channel?.port2.close();
    this.#channel = undefined;
    this.#resume?.();
  }

  /** Fires the events of the next batch (see the module docs). */
  #fireBatch(): void {
    const queue = this.#queue;
    const t0 = queue.first;
    const end = t0 + this.model.overheadUs;
    this.#now = t0;
    const batch = ++this.#batch;
    const later: SimEvent[] = [];
    while (queue.size > 0 && (queue.first < end || queue.first === t0)) {
      const e = queue.pop();
      if (e.wakes !== undefined) {
        if (this.#woken[e.wakes] === batch) {
          later.push(e);
          continue;
        }
        this.#woken[e.wakes] = batch;
        if (this.clock[e.wakes] < e.time) this.clock[e.wakes] = e.time;
      }
      this.events++;
      e.fire();
    }
    for (const e of later) queue.requeue(e);
  }

  /** `m` leaves at `t`: it queues on every port of its path, and arrives after the slowest. */
  #inject(m: SimMessage, t: number): void {
    const path = this.#path(m.src, m.dst);
    let start = t;
    for (const p of path.ports) if (this.#free[p] > start) start = this.#free[p];
    let transfer = 0;
    for (const p of path.ports) {
      const us = m.bytes * this.#usPerByte[p];
      this.#free[p] = start + Math.max(this.model.gapUs, us);
      if (us > transfer) transfer = us;
    }
    const arrival = start + transfer + path.latencyUs;
    this.#queue.push(arrival, () => this.members[m.dst].arrive(m, arrival));
  }

  /** The ports from `src` to `dst`: ranks' own within a host; hosts' (and leaves') between. */
  #path(src: number, dst: number): Path {
    const n = this.size, m = this.model;
    const a = this.hosts[src], b = this.hosts[dst];
    if (a === b) return { ports: [2 * src, 2 * dst + 1], latencyUs: m.intra.latencyUs };
    const hostTx = 2 * n + 2 * a, hostRx = 2 * n + 2 * b + 1;
    if (m.fabric.kind === "flat") return { ports: [hostTx, hostRx], latencyUs: m.inter.latencyUs };
    const leafA = Math.floor(a / m.fabric.hostsPerLeaf),
      leafB = Math.floor(b / m.fabric.hostsPerLeaf);
    if (leafA === leafB) return { ports: [hostTx, hostRx], latencyUs: m.inter.latencyUs };
    const leaves = 2 * n + 2 * m.hosts;
    return {
      ports: [hostTx, leaves + 2 * leafA, leaves + 2 * leafB + 1, hostRx],
      // One more switch between leaves.
      latencyUs: 2 * m.inter.latencyUs,
    };
  }

  #allWaiting(): boolean {
    for (let r = 0; r < this.size; r++) {
      if (!this.#closed[r] && this.members[r].waiting === 0) return false;
    }
    return true;
  }

  /** Nothing is on its way and every rank waits: the first rank's wait, named, fails the group. */
  #deadlock(): void {
    for (const m of this.members) {
      const error = m.stuck(this.#now);
      if (error) return this.abort(error);
    }
    this.abort(new CommTimeoutError(`Every rank waits and no message is on its way`));
  }
}
