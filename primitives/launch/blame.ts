/**
 * Which rank a failed group blames. Launchers record how each rank ended; when one fails, the
 * others usually fail too, because of it (a peer closed, a wait timed out) and sometimes before
 * the launcher learns of the first. Where the ranks' reported calls differ, the rank whose call
 * differs from the majority's is the cause, whoever checked first and whether or not it caught
 * what it was told (a two-rank check cannot tell which of the two is wrong). Otherwise the first
 * cause wins: a rank that threw its own error, died or stalled, never one whose error only names
 * the rank it was waiting for.
 * @module
 */

import { RankFailedError, type RankOutcome } from "../errors.ts";
import { type CallHistory, oddCall } from "./mismatch_blame.ts";

/** How a launcher learned that a rank ended. */
export interface RankEnd extends RankOutcome {
  /** Error name, when the rank reported one (`failed`). */
  name?: string;
  /** The rank its error names as the cause (a `PeerFailedError` or `CommTimeoutError`). */
  blames?: number;
  /** Its peers told it that it failed: `blames` names the one that said so. */
  accused?: boolean;
  /** When the launcher learned it (`performance.now()`). */
  at: number;
  /** Its latest collective calls, as it reported them (mismatch_blame.ts). */
  calls?: CallHistory;
}

/**
 * Errors a rank reports because of another rank (the one they name), not for a cause of its own:
 * a peer that failed, one that never answered, one whose calls differ (a mismatch names the rank
 * that skipped a call, or one of the two that disagree).
 */
const CONSEQUENCES = new Set(["PeerFailedError", "CommTimeoutError", "MismatchError"]);

/** Records rank ends (the first per rank counts) and decides whom to blame. */
export class GroupEnds {
  /** How each member ended, in the order of `#members`. */
  readonly #ends: (RankEnd | undefined)[];
  /** The ranks recorded here: 0 … size−1, or the given ranks (one host's of a larger group). */
  readonly #members: readonly number[];

  /** Ends of ranks 0 … `ranks`−1, or of the ranks listed. */
  constructor(ranks: number | readonly number[]) {
    this.#members = typeof ranks === "number" ? Array.from({ length: ranks }, (_, r) => r) : ranks;
    this.#ends = new Array(this.#members.length).fill(undefined);
  }

  /** The ranks recorded here. */
  get members(): readonly number[] {
    return this.#members;
  }

  /** Records how `rank` ended unless it already has; returns whether this was its end. */
  record(rank: number, end: Omit<RankEnd, "at">): boolean {
    const i = this.#members.indexOf(rank);
    if (i < 0 || this.#ends[i]) return false;
    this.#ends[i] = { ...end, at: performance.now() };
    return true;
  }

  /** How `rank` ended, if it is recorded here and has. */
  #endOf(rank: number): RankEnd | undefined {
    return this.#ends[this.#members.indexOf(rank)];
  }

  /** What each rank returned, by rank (undefined where it did not end `ok`). */
  results(): unknown[] {
    return this.#ends.map((e) => e?.result);
  }

  /** Whether `rank` has ended. */
  ended(rank: number): boolean {
    return this.#endOf(rank) !== undefined;
  }

  /** Whether every rank has ended. */
  get allEnded(): boolean {
    return this.#ends.every((e) => e !== undefined);
  }

  /** Whether any rank has failed, been killed or got stuck. */
  get failed(): boolean {
    return this.#ends.some(isFailure);
  }

  /**
   * The rank a peer should be told failed, from the first failures recorded: the one its error
   * names, or itself.
   */
  suspect(rank: number): number {
    const end = this.#endOf(rank);
    return end && isConsequence(rank, end) ? end.blames! : rank;
  }

  /**
   * The group's failure: the earliest rank that failed for a cause of its own; when every failed
   * rank only names another, the rank at the end of that chain (often one that stalled).
   */
  verdict(): RankFailedError | undefined {
    const failures = this.#ends
      .flatMap((e, i) => (e && isFailure(e) ? [{ rank: this.#members[i], e }] : []))
      .sort((a, b) => a.e.at - b.e.at);
    if (failures.length === 0) return undefined;
    const outcomes = this.#ends.map((e): RankOutcome => {
      if (!e) return { status: "stopped", reason: "it had not finished" };
      return e.status === "ok" ? { status: "ok", result: e.result } : {
        status: e.status,
        reason: e.reason,
      };
    });
    // A majority against one rank's call decides, whatever that rank did about its own error.
    const odd = this.#oddCall(failures.map(({ e }) => e), outcomes, { majority: true });
    if (odd) return odd;
    // A rank told by its peers that it failed (a notice naming itself) repeats their verdict; it
    // is the cause only when no rank saw more.
    const named = failures.filter(({ rank, e }) => isConsequence(rank, e));
    const cause = failures.find(({ rank, e }) => !isConsequence(rank, e) && !isToldOff(rank, e)) ??
      (named.length === 0 ? failures[0] : undefined);
    if (cause) {
      return new RankFailedError(cause.rank, cause.e.reason ?? cause.e.status, cause.e, outcomes);
    }
    // Without a majority (a tie, decided by the root's view) only a rank that failed is named.
    const tied = this.#oddCall(failures.map(({ e }) => e), outcomes, { majority: false });
    if (tied) return tied;
    // Every failure names another rank: follow the names from the first to the end of the chain;
    // the last rank that named it says why. The chain starts at the first rank that saw for
    // itself (a mismatch, a timeout) rather than repeating a peer's notice, which names the
    // notice's sender. Ranks waiting on each other in a loop (each timed out on the next) point
    // away from the cause: then the rank that never reported is it.
    const start = named.find(({ e }) => e.name !== "PeerFailedError") ?? named[0];
    let witness = start.rank;
    let blamed = start.e.blames!;
    for (const seen = new Set([witness]);;) {
      // A mismatch check names the rank whose calls differ: that is the verdict.
      if (this.#endOf(witness)!.name === "MismatchError") break;
      const e = this.#endOf(blamed);
      if (!e || !isFailure(e) || !isConsequence(blamed, e) || this.#convicted(e)) break;
      if (seen.has(e.blames!)) {
        const at = this.#ends.findIndex((e) => !e || e.status === "stopped");
        if (at < 0) break;
        const silent = this.#members[at];
        const first = failures[0];
        return new RankFailedError(
          silent,
          `it stopped responding while the others waited (rank ${first.rank}: ${first.e.reason})`,
          first.e,
          outcomes,
        );
      }
      seen.add(blamed);
      [witness, blamed] = [blamed, e.blames!];
    }
    const why = this.#endOf(witness)!;
    if (why.accused && !isFailure(this.#endOf(blamed))) {
      // Its accuser caught its own error and went on (or is still going): the accusation, which
      // names this rank, is the only evidence left.
      return new RankFailedError(
        witness,
        `rank ${blamed} found it at fault and went on: ${accusation(why.reason ?? "")}`,
        why,
        outcomes,
      );
    }
    const how = why.name === "MismatchError" ? "found a mismatch with it" : "gave up on it";
    return new RankFailedError(blamed, `rank ${witness} ${how}: ${why.reason}`, why, outcomes);
  }

  /**
   * The rank whose call differs from the group's, when the ranks' reported calls (every rank that
   * ended reports its own, failed or not) show one (mismatch_blame.ts) — by a majority (`when`),
   * or by a tie's rule and then only where it failed: the reason says what it called and what the
   * others did, then quotes a mismatch check that named it, where one did.
   */
  #oddCall(
    failures: RankEnd[],
    outcomes: RankOutcome[],
    when: { majority: boolean },
  ): RankFailedError | undefined {
    const histories = new Map<number, CallHistory>();
    this.#ends.forEach((e, i) => e?.calls && histories.set(this.#members[i], e.calls));
    const odd = oddCall(histories);
    const end = odd && this.#endOf(odd.rank);
    if (!odd || !end || odd.majority !== when.majority) return undefined;
    if (!when.majority && !isFailure(end)) return undefined;
    // A check that named it, quoted: its own report first (a peer's notice may be cut short).
    const names = new RegExp(`\\b[Rr]ank ${odd.rank}\\b`);
    const checks = [end, ...failures].filter((e) =>
      e.reason?.includes("MismatchError") && names.test(e.reason)
    );
    const check = checks.find((e) => e.name === "MismatchError") ?? checks[0];
    const quoted = check?.reason?.slice(check.reason.indexOf("MismatchError"));
    const them = odd.others.length === 1
      ? `rank ${odd.others[0]}`
      : `ranks ${odd.others.join(", ")}`;
    return new RankFailedError(
      odd.rank,
      `its call differs from that of ${them}: rank ${odd.rank} called ${odd.called} where ` +
        `${them} called ${odd.theyCalled}${quoted ? ` (${quoted})` : ""}`,
      end,
      outcomes,
    );
  }

  /**
   * Whether `e` is a rank's report that a peer's mismatch check named it (a skipped or different
   * call): the chain ends there. A rank accused by a peer that timed out on it may itself have
   * been waiting for another, so its own name is no verdict.
   */
  #convicted(e: RankEnd): boolean {
    return e.accused === true && this.#endOf(e.blames!)?.name === "MismatchError";
  }
}

/**
 * What an accuser said, from the accused rank's report of it (errors.ts, `noticeError`:
 * `PeerFailedError: Rank <accuser> failed: it gave up on rank <accused>: <what it said>`).
 */
function accusation(reason: string): string {
  return reason.replace(/^PeerFailedError: Rank \d+ failed: it gave up on rank \d+: /, "");
}

function isFailure(e: RankEnd | undefined): boolean {
  return e !== undefined && e.status !== "ok" && e.status !== "stopped";
}

/** A peer's notice that names `rank` itself as the one that failed. */
function isToldOff(rank: number, e: RankEnd): boolean {
  return e.name === "PeerFailedError" && e.blames === rank;
}

function isConsequence(rank: number, e: RankEnd): boolean {
  return e.status === "failed" && CONSEQUENCES.has(e.name ?? "") && e.blames !== undefined &&
    e.blames !== rank;
}
