/**
 * A rank's record of its recent collective calls (tag → stamp), against which every message and
 * shared-memory arrival from a peer is judged: the communicator's side of the mismatch check
 * (primitives/stamp.ts). Messages that arrive before this rank reaches their call are judged when
 * it does, so a peer running ahead is never mistaken for a mismatch.
 * @module
 */

import { MismatchError } from "./errors.ts";
import { algorithmName } from "./registry.ts";
import { describeStamp } from "./stamp.ts";
import type { CallCheck } from "./transports/transport.ts";

/** Largest user tag + 1; tags from here on belong to collectives. */
export const MAX_TAG = 2 ** 30;
/** Calls remembered: a message that arrives later than this after its call is not judged. */
const REMEMBERED = 64;

/** Checks arrivals against this rank's calls (see the module docs). */
export class CallBook implements CallCheck {
  readonly #rank: number;
  readonly #tags = new Float64Array(REMEMBERED).fill(-1);
  readonly #stamps = new Float64Array(REMEMBERED);
  /** Tag of the latest call begun, or −1. */
  #current = -1;
  /** Messages for calls this rank has not begun yet. */
  #early: { peer: number; tag: number; stamp: number }[] = [];

  constructor(rank: number) {
    this.#rank = rank;
  }

  /** Records the call with `tag` and `stamp`; throws if a peer already sent another call's data. */
  begin(tag: number, stamp: number): void {
    const i = tag % REMEMBERED;
    this.#tags[i] = tag;
    this.#stamps[i] = stamp;
    this.#current = tag;
    if (this.#early.length === 0) return;
    const now = this.#early.filter((e) => e.tag === tag);
    this.#early = this.#early.filter((e) => e.tag !== tag);
    const wrong = now.find((e) => e.stamp !== stamp);
    if (wrong) throw this.mismatch(wrong.peer, stamp, wrong.stamp);
  }

  arrived(peer: number, tag: number, stamp: number): MismatchError | undefined {
    if (tag < MAX_TAG) return undefined; // point-to-point: judged by the receive
    const i = tag % REMEMBERED;
    if (this.#tags[i] === tag) {
      return this.#stamps[i] === stamp ? undefined : this.mismatch(peer, this.#stamps[i], stamp);
    }
    // Not begun yet (a peer ahead), or long past (not judged).
    const ahead = this.#current < 0 || (tag - this.#current + MAX_TAG) % MAX_TAG < MAX_TAG / 2;
    if (ahead) this.#early.push({ peer, tag, stamp });
    return undefined;
  }

  stampOf(tag: number): number | undefined {
    const i = tag % REMEMBERED;
    return this.#tags[i] === tag ? this.#stamps[i] : undefined;
  }

  mismatch(peer: number, mine: number, theirs: number): MismatchError {
    return new MismatchError(
      `Rank ${this.#rank} called ${this.describe(mine)} but rank ${peer} called ` +
        `${this.describe(theirs)}: every rank must make the same calls in the same order, with ` +
        `the same count, dtype, op, root and algorithm`,
      { failedRank: peer },
    );
  }

  describe(stamp: number): string {
    return describeStamp(stamp, algorithmName);
  }
}
