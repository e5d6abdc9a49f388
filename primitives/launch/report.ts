/**
 * What a rank tells its launcher about how it ended (by message for workers, on a marked stdout
 * line for processes), and how the launcher reads that as a `RankEnd` for its verdict.
 * @module
 */

import { PeerFailedError } from "../errors.ts";
import type { RankEnd } from "./verdict.ts";

/** The error a rank failed with, as it reports it. */
export interface FailureReport {
  name: string;
  message: string;
  stack?: string;
  /** The rank the error names as the cause. */
  failedRank?: number;
  /** Peers told this rank that it failed: `failedRank` is the one that said so. */
  accused?: boolean;
}

/** Rank → launcher: the outcome (`returned`: the function returned, the rank is closing). */
export type RankReport =
  | { type: "returned" }
  | { type: "done"; result: unknown }
  | ({ type: "error" } & FailureReport);

/** The report of an error that ended a rank. */
export function failureReport(err: unknown): FailureReport {
  const e = err instanceof Error ? err : new Error(String(err));
  return {
    name: e.name,
    message: e.message,
    stack: e.stack,
    failedRank: (e as { failedRank?: number }).failedRank,
    accused: e instanceof PeerFailedError ? e.accused : undefined,
  };
}

/** How a failure report ends its rank, for the launcher's verdict. */
export function failedEnd(report: FailureReport): Omit<RankEnd, "at"> {
  return {
    status: "failed",
    name: report.name,
    reason: `${report.name}: ${report.message}`,
    blames: report.failedRank,
    accused: report.accused,
  };
}

/** How a rank's final report ends it, for the launcher's verdict. */
export function reportEnd(report: Exclude<RankReport, { type: "returned" }>): Omit<RankEnd, "at"> {
  return report.type === "done" ? { status: "ok", result: report.result } : failedEnd(report);
}
