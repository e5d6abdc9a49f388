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
import { DONE } from "../types.ts";

/** One buffer of a call: its bytes, and whether the call writes them. */
export interface Use extends Extent {
  readonly writes: boolean;
}

/** The uses of a call's buffers (each with whether the call writes it). */
export function usesOf(buffers: readonly (readonly [CommBuffer, boolean])[]): Use[] {
  return buffers.map(([buf, writes]) => ({ ...extentOf(buf), writes }));
}

interface Entry {
  uses: readonly Use[];
  done: Promise<unknown>;
}

const settle = () => {};

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
    let waits: Promise<unknown>[] | undefined;
    for (const entry of this.#entries) {
      if (clash(entry.uses, uses)) (waits ??= []).push(entry.done.then(settle, settle));
    }
    if (!waits) return parked;
    if (parked) waits.push(parked);
    return Promise.all(waits).then(settle);
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

  /** Enters a call on `uses` until `done` settles; returns `done`. */
  enter<T>(uses: readonly Use[], done: Promise<T>): Promise<T> {
    if (uses.length === 0 || done === DONE) return done;
    const entry = { uses, done };
    this.#entries.push(entry);
    const leave = () => {
      const i = this.#entries.indexOf(entry);
      if (i >= 0) this.#entries.splice(i, 1);
    };
    done.then(leave, leave);
    return done;
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
