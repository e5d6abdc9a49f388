/**
 * How a rank closes its part of a group: it tells every peer the summary of its calls
 * (`CallSummary`) and how many of that peer's messages it took, waits for theirs, and judges
 * them against its own calls and whatever a peer sent that no call took. A peer whose goodbye
 * does not come within the timeout is still running: it judges this rank's goodbye itself when
 * it arrives. Each transport carries the goodbyes its own way; the bookkeeping is here.
 * @module
 */

import { type CommError, MismatchError } from "../errors.ts";
import type { CallCheck, CallSummary } from "./transport.ts";

/**
 * What a closing rank tells one peer: the summary of its calls (none without a communicator),
 * and how many of that peer's messages its receives took.
 */
export interface Goodbye {
  summary?: CallSummary;
  taken: number;
}

/** A message no call took: its sender, tag and stamp. */
export interface Unclaimed {
  peer: number;
  tag: number;
  stamp: number;
}

/** A rank's goodbyes: what it says, what it heard, and a wait for the rest. */
export class ClosingCheck {
  readonly #rank: number;
  /** Peers heard from (a goodbye, or an end without one); this rank counts as heard. */
  readonly #heard: boolean[];
  /** Peers that say goodbye to this rank. */
  readonly #expected: boolean[];
  #left: number;
  /** ClosingCheck that came before the calls could judge them, with what this rank had sent. */
  #unjudged: { peer: number; bye: Goodbye; sent: number }[] = [];
  /** How many of this rank's messages each peer that said goodbye took. */
  readonly #taken: (number | undefined)[] = [];
  #calls?: CallCheck;
  #wake?: () => void;
  /** This rank's calls, summed up for its goodbyes (see {@linkcode ClosingCheck.to}). */
  #summary?: CallSummary;

  /** The group-wide rank of each rank here, for messages (see `ShmControl.ids`). */
  readonly #ids?: readonly number[];

  /**
   * ClosingCheck of every rank of `size` but `rank` that `expected` says will say one (the ranks a
   * transport links this rank to); `ids` name the ranks in messages.
   */
  constructor(
    rank: number,
    size: number,
    expected: (peer: number) => boolean = () => true,
    ids?: readonly number[],
  ) {
    this.#rank = rank;
    this.#expected = Array.from({ length: size }, (_, r) => expected(r));
    this.#heard = this.#expected.map((e, r) => r === rank || !e);
    this.#left = this.#heard.filter((h) => !h).length;
    this.#ids = ids;
  }

  /** Whether `peer` says goodbye to this rank (it is one the transport links). */
  expects(peer: number): boolean {
    return peer !== this.#rank && this.#expected[peer];
  }

  /**
   * The calls goodbyes are judged against (the communicator's): goodbyes that came before them
   * are judged now; the first problem is returned.
   */
  attach(calls: CallCheck | undefined): CommError | undefined {
    this.#calls = calls;
    const early = this.#unjudged.splice(0);
    let problem: CommError | undefined;
    for (const { peer, bye, sent } of early) problem ??= this.#judge(peer, bye, sent);
    return problem;
  }

  /**
   * The goodbye this rank says to `peer`, whose messages its receives took `taken` of. A rank
   * that says goodbye makes no more calls: their summary is made once, for every peer.
   */
  to(taken: number): Goodbye {
    this.#summary ??= this.#calls?.summary();
    return { summary: this.#summary, taken };
  }

  /** Whether `peer` said goodbye (or ended without one). */
  heardFrom(peer: number): boolean {
    return peer !== this.#rank && this.#heard[peer];
  }

  /** Whether every peer has said goodbye. */
  get all(): boolean {
    return this.#left === 0;
  }

  /**
   * `peer` said goodbye (`bye`; this rank had sent it `sent` messages), or ended without one:
   * nothing more will come from it. Returns the problem its goodbye shows, if any.
   */
  heard(peer: number, bye?: Goodbye, sent = 0): CommError | undefined {
    if (this.#heard[peer]) return undefined;
    this.#heard[peer] = true;
    this.#left--;
    this.#taken[peer] = bye?.taken;
    const problem = bye === undefined
      ? undefined
      : this.#calls
      ? this.#judge(peer, bye, sent)
      : void this.#unjudged.push({ peer, bye, sent });
    this.#wake?.();
    return problem;
  }

  /**
   * Resolves once every peer has said goodbye, `stop()` holds (checked as goodbyes arrive and
   * when {@linkcode ClosingCheck.interrupt} is called), or `timeoutMs` passed without a goodbye.
   */
  wait(timeoutMs: number, stop: () => boolean): Promise<void> {
    return new Promise((resolve) => {
      let timer: ReturnType<typeof setTimeout>;
      // A goodbye moves the deadline: the timer, when it fires, sleeps on to the moved one (a
      // rank of thousands hears thousands of goodbyes; a timer for each cost seconds).
      let heardAt = performance.now();
      const expire = () => {
        const left = heardAt + timeoutMs - performance.now();
        if (left > 0) timer = setTimeout(expire, left);
        else done();
      };
      const done = () => {
        clearTimeout(timer);
        this.#wake = undefined;
        resolve();
      };
      this.#wake = () => (this.all || stop() ? done() : void (heardAt = performance.now()));
      if (this.all || stop()) done();
      else timer = setTimeout(expire, timeoutMs);
    });
  }

  /** Ends a {@linkcode ClosingCheck.wait} whose `stop()` may now hold (an abort, say). */
  interrupt(): void {
    this.#wake?.();
  }

  /**
   * What this rank finds as it closes, once its peers' goodbyes are in: calls that differ from a
   * peer's, else a message that no call took, here or (`sent[peer]` messages in all) at a peer
   * that said goodbye before this rank's last sends; undefined when all is well.
   */
  closing(unclaimed: Unclaimed | undefined, sent: readonly number[]): CommError | undefined {
    const calls = this.#calls;
    if (!calls) return undefined;
    const problem = calls.closing() ??
      (unclaimed && calls.unclaimed(unclaimed.peer, unclaimed.tag, unclaimed.stamp));
    if (problem) return problem;
    for (const [peer, taken] of this.#taken.entries()) {
      if (taken !== undefined && taken < sent[peer]) return this.#untaken(peer, taken, sent[peer]);
    }
    return undefined;
  }

  /**
   * The goodbye of `peer`, to which this rank sent `sent` messages (it may close before this
   * rank's last calls): the error if it contradicts this rank's calls, or left messages of this
   * rank untaken.
   */
  #judge(peer: number, bye: Goodbye, sent: number): CommError | undefined {
    const problem = bye.summary && this.#calls?.peerClosed(peer, bye.summary);
    return problem || (bye.taken < sent ? this.#untaken(peer, bye.taken, sent) : undefined);
  }

  #untaken(peer: number, taken: number, sent: number): MismatchError {
    return new MismatchError(
      `Rank ${this.#id(peer)} closed its communicator having received ${taken} of the ${sent} ` +
        `messages rank ${
          this.#id(this.#rank)
        } sent it: every message must be received, and every rank ` +
        `must make the same calls`,
      { failedRank: this.#id(peer) },
    );
  }

  #id(rank: number): number {
    return this.#ids?.[rank] ?? rank;
  }
}
