/**
 * The buffers of a communicator's calls still in flight, so that a call whose buffers overlap
 * theirs waits for them: as on one NCCL stream, the results equal those of the calls run one
 * after another in issue order, whatever the transport. Two calls conflict where they share a
 * byte and either writes it; calls on disjoint buffers (or that only read the same bytes) keep
 * overlapping. The runner and the point-to-point calls consult one table, so a collective waits
 * for a receive into its buffer and a receive for a send of its buffer alike. A call enters as it
 * is issued (while it waits its turn too) and leaves when it settles; one that finished within
 * its call never enters. Empty, the table costs a call one field read.
 *
 * A call that has to wait parks, and every call issued after it waits until it has begun, so
 * calls that wait begin in issue order: on a transport whose waits block the thread (`shm`), a
 * collective never blocks while a call issued before it still waits on the event loop to post
 * what a peer needs.
 * @module
 */

import { type Extent, extentOf } from "../memory/extent.ts";
import type { CommBuffer } from "../memory/comm_buffer.ts";

/** One buffer of a call: its bytes, and whether the call writes them. */
export interface Use extends Extent {
  readonly writes: boolean;
}

/** The use of `buf` by a call that `writes` it or only reads it. */
export function useOf(buf: CommBuffer, writes: boolean): Use {
  const { home, start, end } = extentOf(buf);
  return { home, start, end, writes };
}

/** The uses of a call's buffers (each with whether the call writes it). */
export function usesOf(buffers: readonly (readonly [CommBuffer, boolean])[]): Use[] {
  const uses: Use[] = [];
  for (const [buf, writes] of buffers) uses.push(useOf(buf, writes));
  return uses;
}

/** A call in flight: its uses, until it leaves; `settled` once a later call waits for it. */
export interface Entry {
  readonly uses: readonly Use[];
  settled?: Promise<void>;
  release?: () => void;
}

const settle = () => {};
/** The entry of a call on no buffers (a barrier): never in the table. */
const NOWHERE: Entry = { uses: [] };

/** The calls in flight on one communicator and the buffers they use. */
export class InFlight {
  #entries: Entry[] = [];
  /** Settles once the latest call that had to wait has begun (and so every one before it). */
  #parked: Promise<void> | undefined;

  /**
   * What a call on `uses` issued now waits for before it begins: the calls issued before it that
   * wait to begin, and those in flight that conflict with it (however they end); `undefined`
   * when nothing (it may begin at once). Taken as a call is issued, before it enters itself, so
   * it waits for exactly the calls issued before it, whichever order (collectives, sends,
   * receives by tag) they wait in. A call given a promise here must {@linkcode park}.
   */
  before(uses: readonly Use[]): Promise<void> | undefined {
    const parked = this.#parked;
    if (this.#entries.length === 0) return parked;
    let waits: Promise<void>[] | undefined;
    for (const entry of this.#entries) {
      if (!clash(entry.uses, uses)) continue;
      entry.settled ??= new Promise<void>((resolve) => entry.release = resolve);
      (waits ??= []).push(entry.settled);
    }
    if (!waits) return parked;
    if (parked) waits.push(parked);
    return waits.length === 1 ? waits[0] : Promise.all(waits).then(settle);
  }

  /**
   * A call that waits parks until it has begun (or failed to): every call issued meanwhile waits
   * for it. Returns what the call runs once it has.
   */
  park(): () => void {
    let begun!: () => void;
    const parked = new Promise<void>((resolve) => begun = resolve);
    this.#parked = parked;
    parked.then(() => {
      if (this.#parked === parked) this.#parked = undefined;
    });
    return begun;
  }

  /** A call on `uses` is in flight from now until it {@linkcode leave}s. */
  enter(uses: readonly Use[]): Entry {
    if (uses.length === 0) return NOWHERE;
    const entry: Entry = { uses };
    this.#entries.push(entry);
    return entry;
  }

  /** `entry`'s call has settled (however it ended); nothing for none. */
  leave(entry: Entry | undefined): void {
    if (!entry || entry === NOWHERE) return;
    const i = this.#entries.indexOf(entry);
    if (i < 0) return;
    this.#entries.splice(i, 1);
    entry.release?.();
  }
}

function clash(a: readonly Use[], b: readonly Use[]): boolean {
  for (const x of a) {
    for (const y of b) {
      if (
        (x.writes || y.writes) && x.home === y.home && x.start < y.end && y.start < x.end
      ) return true;
    }
  }
  return false;
}
