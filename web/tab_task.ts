/**
 * What a tab of a mixed group runs (web/tab_group_rank.ts), as the hub hands it over: a rank
 * program of the page's bundle and its arguments.
 * @module
 */

/** The trainer's rank program, which a tab hands its data (read from the page's server). */
export const TRAIN_PROGRAM = "web/tab_train_rank.ts";
/** The benchmarks' rank program, which reports on a channel (rank 0's only). */
export const SWEEP_PROGRAM = "web/tab_sweep_rank.ts";

/** What the hub hands every tab in its table: the rank program (a bundle entry) and its args. */
export interface TabTask {
  /** The program's path in the repository (bundled as `.js` under `/bundle/`). */
  program: string;
  args: unknown;
}

/** What the join page knows of its rank (`globalThis.dcclJoin`, which drivers read). */
export interface JoinState {
  status: "joining" | "running" | "done" | "failed";
  /** The tab's first rank, and all of them (several with `--threads`). */
  rank?: number;
  ranks?: number[];
  size?: number;
  /** How it ended: what its first rank's program returned (and each's), or the error's line. */
  result?: unknown;
  results?: unknown[];
  error?: string;
  /** Settles once the rank has ended. */
  ended: Promise<void>;
}
