/**
 * What every launcher does with its ranks once they run: record how each ended, tell the others
 * at once when one fails, give them a moment to report, give stragglers a deadline once one has
 * finished, blame the right rank (blame.ts), stop whatever still runs, and settle.
 * @module
 */

import { platform } from "../platform.ts";
import { DEFAULT_TIMEOUT_MS } from "../types.ts";
import { GroupEnds, type RankEnd } from "./blame.ts";

/** What a group of ranks is started with, however its transport starts them. */
export interface GroupOptions {
  /** Number of ranks. */
  size: number;
  /** The transport; it decides how ranks start. @default {the table's first of that kind} */
  transport?: string;
  /** Milliseconds an operation may wait without progress before it fails. @default {30000} */
  timeoutMs?: number;
  /**
   * Milliseconds the other ranks have to finish once one has returned; a rank still running then
   * is stuck (the group fails, naming it). The default outlasts the ranks' own timeouts, so a
   * rank waiting for one that skipped a call reports that first. @default {2 × timeoutMs}
   */
  stragglerMs?: number;
  /** Passed to every rank's function (structured-cloned for workers, JSON for processes). */
  args?: unknown;
  /** Aborting stops every rank and rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Open a WebGPU device in every rank, for `gpu` and `managed` memory. @default {false} */
  gpu?: boolean;
  /**
   * Where a rank's calls progress: `thread` runs its communicator on a progress thread of its
   * own, so calls go on while the rank computes (a process rank's, or a rank of a workers
   * transport that shares memory: progress_rank.ts). @default {"inline"}
   */
  progress?: "inline" | "thread";
  /**
   * What a thread transport is configured with (the `sim` transport's network model:
   * transports/sim_model.ts); other transports take none.
   */
  transportOptions?: unknown;
  /** Name of the exported function each rank runs as `fn(comm, args)`. @default {"run"} */
  entry?: string;
  /**
   * A module every rank imports before it joins: what its runtime adds to the web platform
   * (runtime.ts; Deno's launchers name theirs). @default {none: the web platform alone}
   */
  runtime?: URL | string;
  /**
   * The CPU the `slot`-th of `slots` ranks on this machine runs on, where the launcher binds
   * ranks to CPUs (it hands the rank that CPU; the runtime binds it). @default {none}
   */
  placement?: (slot: number, slots: number) => number | undefined;
  /**
   * Where the ranks' entry modules are: the worker that runs a workers transport's rank, and the
   * one that runs a thread transport's group (a page serves them bundled). @default {the modules
   * beside the launchers, worker_rank.ts and thread_rank.ts}
   */
  rankEntries?: {
    /** What a workers transport's rank runs (worker_rank.ts). */
    workers: URL | string;
    /** What runs a thread transport's logical ranks (thread_rank.ts). */
    thread: URL | string;
  };
}

/** A running group of ranks. */
export interface RankGroup<T> {
  /**
   * Every rank's return value, by rank; rejects with a `RankFailedError` naming the rank that
   * caused the failure, with how every rank ended in its `outcomes`.
   */
  readonly results: Promise<T[]>;
  /** Terminates one rank, as if it had died. */
  kill(rank: number): void;
}

/** `size` if it is a group size; else a RangeError. */
export function checkSize(size: number): number {
  if (!Number.isInteger(size) || size < 1) {
    throw new RangeError(`Invalid size ${size}: a group needs an integer ≥ 1 ranks`);
  }
  return size;
}

/**
 * The supervisor's deadlines for a group started with `options`. Once a rank has failed, the
 * others have the group's timeout to report (those that fail because of it usually report at
 * once; survivors that catch it may go on working, slowly on a loaded machine) before they are
 * judged and stopped: a rank that makes no progress for that long would time out by itself.
 */
export function deadlines(
  options: Pick<GroupOptions, "timeoutMs" | "stragglerMs">,
): { graceMs: number; stragglerMs: number } {
  const graceMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return { graceMs, stragglerMs: options.stragglerMs ?? 2 * graceMs };
}

/** How a launcher acts on its ranks. */
export interface SupervisorHooks {
  /** Tells every rank that `failedRank` failed, and why (the first failure only). */
  relay(failedRank: number, reason: string): void;
  /** Stops every rank still running; the group settles once it resolves. */
  stop(): void | Promise<void>;
}

/** Watches `size` ranks and settles `results` (see the module docs). */
export class Supervisor<T> {
  /** Every rank's result, by rank, or the verdict's `RankFailedError`. */
  readonly results: Promise<T[]>;
  readonly #ends: GroupEnds;
  readonly #hooks: SupervisorHooks;
  readonly #graceMs: number;
  readonly #stragglerMs: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** Ranks whose function has returned (they may still be closing their communicators). */
  readonly #returned = new Set<number>();
  #judged = false;
  #settle!: { resolve: (v: T[]) => void; reject: (e: unknown) => void };

  /**
   * Watches ranks 0 … `ranks`−1, or the ranks listed. `graceMs`: how long to wait for reports
   * after the first failure; `stragglerMs`: how long the others have once one rank has finished.
   */
  constructor(
    ranks: number | readonly number[],
    options: { graceMs: number; stragglerMs: number },
    hooks: SupervisorHooks,
  ) {
    this.#ends = new GroupEnds(ranks);
    this.#hooks = hooks;
    this.#graceMs = options.graceMs;
    this.#stragglerMs = options.stragglerMs;
    this.results = new Promise((resolve, reject) => this.#settle = { resolve, reject });
  }

  /** Whether the group has been judged (ends recorded after that no longer count). */
  get judged(): boolean {
    return this.#judged;
  }

  /**
   * `rank`'s function returned; it is closing its communicator, which waits for its peers. The
   * others' deadline starts now, as if it had finished.
   */
  returned(rank: number): void {
    this.#returned.add(rank);
    if (!this.#judged && !this.#ends.failed && this.#timer === undefined) {
      this.#wait(this.#stragglerMs, rank);
    }
  }

  /** Records how `rank` ended (its first end counts) and acts on it. */
  ended(rank: number, end: Omit<RankEnd, "at">): void {
    const wasFailed = this.#ends.failed;
    if (this.#judged || !this.#ends.record(rank, end)) return;
    if (this.#ends.allEnded) return void this.judge();
    if (end.status === "ok") {
      // Ranks stuck in user code never report: a deadline once one has finished.
      if (!wasFailed && this.#timer === undefined) this.#wait(this.#stragglerMs, rank);
      return;
    }
    if (wasFailed) return;
    // The first failure: tell every rank at once, then give them a moment to report.
    this.#hooks.relay(this.#ends.suspect(rank), end.reason ?? end.status);
    this.#wait(this.#graceMs);
  }

  /** Judges now: ranks that have not ended are stopped (and not blamed), then the group settles. */
  async judge(): Promise<void> {
    if (this.#judged) return;
    this.#judged = true;
    clearTimeout(this.#timer);
    const verdict = this.#ends.verdict();
    try {
      await this.#hooks.stop();
    } finally {
      if (verdict) this.#settle.reject(verdict);
      else this.#settle.resolve(this.#ends.results() as T[]);
    }
  }

  /** Settles with `reason` without a verdict (an abort signal: the caller stopped the group). */
  async cancel(reason: unknown): Promise<void> {
    if (this.#judged) return;
    this.#judged = true;
    clearTimeout(this.#timer);
    await this.#hooks.stop();
    this.#settle.reject(reason);
  }

  /** Judges after `ms`; after rank `finished` did, ranks still running then are stuck. */
  #wait(ms: number, finished?: number): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      if (finished !== undefined) {
        const late = this.#ends.members.filter((r) => !this.#ends.ended(r));
        // A rank closing its communicator waits for the ranks still running, which are to blame;
        // where every late rank returned, none of them finished closing: they are.
        const running = late.some((r) => !this.#returned.has(r));
        for (const r of late) {
          this.#ends.record(
            r,
            running && this.#returned.has(r)
              ? { status: "stopped", reason: "it was closing its communicator" }
              : {
                status: "stuck",
                reason: this.#returned.has(r)
                  ? `it had not closed its communicator ${ms} ms after rank ${finished} finished`
                  : `it had not finished ${ms} ms after rank ${finished} did`,
              },
          );
        }
      }
      this.judge();
    }, ms);
    platform.unrefTimer(this.#timer);
  }
}
