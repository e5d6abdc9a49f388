/**
 * A rank's record of its collective calls, against which every message and shared-memory arrival
 * from a peer is judged: the communicator's side of the mismatch check (primitives/communicator/stamp.ts).
 * Messages that arrive before this rank reaches their call are judged when it does, so a peer
 * running ahead is never mistaken for a mismatch. It also keeps a digest of every call this rank
 * made, which a closing rank hands its peers ({@linkcode CallSummary}), so ranks whose calls
 * differed without a message ever crossing between them still find out when they close.
 * @module
 */

import { MismatchError } from "../errors.ts";
import { algorithmName } from "../registry.ts";
import { describeStamp } from "./stamp.ts";
import type { CallCheck, CallSummary } from "../transports/transport.ts";

/** Largest user tag + 1; tags from here on belong to collectives. */
export const MAX_TAG = 2 ** 30;
/** Calls remembered: a message that arrives later than this after its call is not judged. */
const REMEMBERED = 64;
/** FNV-1a's offset basis and prime: the digest of a rank's calls. */
const DIGEST_SEED = 0x811c9dc5 | 0, DIGEST_PRIME = 0x01000193;

/** Checks arrivals against this rank's calls (see the module docs). */
export class CallLog implements CallCheck {
  readonly #rank: number;
  /** The last {@linkcode REMEMBERED} calls' tags and stamps, by tag modulo their number. */
  readonly #tags = new Float64Array(REMEMBERED).fill(-1);
  readonly #stamps = new Float64Array(REMEMBERED);
  /** The stamps' bytes as 32-bit words, which the digest folds. */
  readonly #stampWords = new Int32Array(this.#stamps.buffer);
  /** Tag of the latest call begun, or −1. */
  #current = -1;
  /** Collective calls begun. */
  #calls = 0;
  /**
   * Digest of the calls before the block of {@linkcode REMEMBERED} being filled: stamps are
   * folded in a block at a time, so a call costs no hashing.
   */
  #digest = DIGEST_SEED;
  /** Messages for calls this rank has not begun yet. */
  #early: { peer: number; tag: number; stamp: number }[] = [];
  /** What each peer that closed had done, by rank. */
  readonly #closed: (CallSummary | undefined)[] = [];
  /** The tag of the first call a closed peer did not make (none may begin from it), and the peer. */
  #closedAt = Number.MAX_SAFE_INTEGER;
  #closedPeer = -1;
  /** Calls from this tag on are judged as they begin: 0 while messages wait, else `#closedAt`. */
  #judgeFrom = Number.MAX_SAFE_INTEGER;

  constructor(rank: number) {
    this.#rank = rank;
  }

  /**
   * Records the call with `tag` and `stamp` (tags count calls from {@linkcode MAX_TAG}); throws
   * if a peer already sent another call's data, or closed its communicator before this call.
   */
  begin(tag: number, stamp: number): void {
    const i = tag % REMEMBERED;
    this.#tags[i] = tag;
    this.#stamps[i] = stamp;
    this.#current = tag;
    this.#calls++;
    if (i === REMEMBERED - 1) this.#digest = this.#folded(REMEMBERED);
    if (tag >= this.#judgeFrom) this.#judge(tag, stamp);
  }

  /** Judges a call just begun against messages that came early, and peers that closed. */
  #judge(tag: number, stamp: number): void {
    if (tag >= this.#closedAt) throw this.#outlived(this.#closedPeer, stamp);
    const now = this.#early.filter((e) => e.tag === tag);
    this.#early = this.#early.filter((e) => e.tag !== tag);
    this.#judgeFrom = this.#early.length > 0 ? 0 : this.#closedAt;
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
    if (ahead) {
      this.#early.push({ peer, tag, stamp });
      this.#judgeFrom = 0;
    }
    return undefined;
  }

  /**
   * The latest `n` calls begun, oldest first, as `[tag, stamp]` pairs: what a failed rank tells
   * its launcher, whose verdict finds the rank whose call differs from the others'.
   */
  recent(n: number): [number, number][] {
    const latest: [number, number][] = [];
    for (
      let tag = this.#current;
      tag >= MAX_TAG && latest.length < Math.min(n, REMEMBERED);
      tag--
    ) {
      const i = tag % REMEMBERED;
      if (this.#tags[i] === tag) latest.unshift([tag, this.#stamps[i]]);
    }
    return latest;
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

  summary(): CallSummary {
    const calls = this.#calls;
    return {
      calls,
      digest: this.#folded(calls % REMEMBERED) >>> 0,
      last: calls === 0 ? 0 : this.#stamps[(calls - 1) % REMEMBERED],
    };
  }

  peerClosed(peer: number, summary: CallSummary): MismatchError | undefined {
    this.#closed[peer] = summary;
    const at = MAX_TAG + summary.calls; // its first call not made
    if (at < this.#closedAt) [this.#closedAt, this.#closedPeer] = [at, peer];
    this.#judgeFrom = Math.min(this.#judgeFrom, at);
    if (summary.calls < this.#calls) return this.#outlived(peer);
    if (summary.calls === this.#calls) return this.#differs(peer, summary);
    return undefined; // judged when this rank closes
  }

  closing(): MismatchError | undefined {
    for (let peer = 0; peer < this.#closed.length; peer++) {
      const theirs = this.#closed[peer];
      if (!theirs) continue;
      if (theirs.calls < this.#calls) return this.#outlived(peer);
      if (theirs.calls > this.#calls) {
        return new MismatchError(
          `Rank ${this.#rank} closed its communicator after ${this.#calls} collective calls ` +
            `but rank ${peer} made ${theirs.calls}: every rank must make the same calls`,
          { failedRank: this.#rank },
        );
      }
      const problem = this.#differs(peer, theirs);
      if (problem) return problem;
    }
    return undefined;
  }

  unclaimed(peer: number, tag: number, stamp: number): MismatchError {
    const what = tag < MAX_TAG
      ? `a point-to-point message (tag ${tag}) that no receive took`
      : `a message of ${this.describe(stamp)} that no call of rank ${this.#rank} took`;
    return new MismatchError(
      `Rank ${peer} sent rank ${this.#rank} ${what} before both closed their communicators: ` +
        `every message must be received, and every rank must make the same calls`,
      { failedRank: peer },
    );
  }

  /** The digest with the first `n` stamps of the block being filled folded in (FNV-1a). */
  #folded(n: number): number {
    const words = this.#stampWords;
    let digest = this.#digest;
    for (let k = 0; k < 2 * n; k++) digest = Math.imul(digest ^ words[k], DIGEST_PRIME);
    return digest;
  }

  /**
   * `peer` closed after fewer calls than this rank makes: the first call it skipped is named when
   * it is among the remembered ones (`stamp`, when this rank is beginning it).
   */
  #outlived(peer: number, stamp?: number): MismatchError {
    const calls = this.#closed[peer]!.calls;
    const skipped = stamp ?? this.stampOf(MAX_TAG + calls);
    const made = skipped === undefined
      ? `made ${this.#calls} collective calls`
      : `called ${this.describe(skipped)}`;
    return new MismatchError(
      `Rank ${this.#rank} ${made} but rank ${peer} had closed its communicator after ${calls} ` +
        `collective calls: every rank must make the same calls`,
      { failedRank: peer },
    );
  }

  /** The error if `peer`, closed after as many calls as this rank made, made other ones. */
  #differs(peer: number, theirs: CallSummary): MismatchError | undefined {
    const mine = this.summary();
    if (theirs.digest === mine.digest) return undefined;
    if (theirs.last !== mine.last) return this.mismatch(peer, mine.last, theirs.last);
    return new MismatchError(
      `Rank ${this.#rank} and rank ${peer} made different collective calls (${this.#calls} ` +
        `each; their kinds, counts, dtypes, ops, roots or algorithms differ): every rank must ` +
        `make the same calls in the same order`,
      { failedRank: peer },
    );
  }
}
