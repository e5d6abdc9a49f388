/**
 * What a rank tells its launcher about how it ended (by message for workers, on a marked stdout
 * line for processes), and how the launcher reads that as a `RankEnd` for its verdict.
 * @module
 */

import { type Communicator, recentCalls } from "../communicator/communicator.ts";
import { type ErrorReport, errorReport } from "../errors.ts";
import type { RankEnd } from "./blame.ts";

/** Launcher → ranks in workers: the program every rank runs, and its group. */
export interface RankProgram {
  type: "init";
  size: number;
  transport: string;
  /** The module's URL, and the name of its exported function. */
  module: string;
  entry: string;
  args: unknown;
  timeoutMs: number;
  /** The runtime module the rank imports first (`GroupOptions.runtime`). */
  runtime?: string;
  /** Where a worker that opens a WebGPU device writes its thread's id first (gpu_teardown.ts). */
  gpuThreads?: Int32Array;
}

/** A process rank's stdout line starting with this carries its result (not printed). */
export const RESULT_MARK = "\u0001dccl-result ";
/** A process rank's stdout line before its result: its latest collective calls, as JSON. */
export const CALLS_MARK = "\u0001dccl-calls ";
/** A process rank's stdout line that says its function returned (it is closing its communicator). */
export const RETURNED_MARK = "\u0001dccl-returned";
/** A process rank's stdout line starting with this carries the error it failed with, as JSON. */
export const ERROR_MARK = "\u0001dccl-error ";
/** Rank 0's stdout line starting with this carries the port it picked (not printed). */
export const PORT_MARK = "\u0001dccl-port ";

/** The error a rank failed with, as it reports it. */
export interface FailureReport extends ErrorReport {
  /** Its latest collective calls, `[tag, stamp]` (for the blame: mismatch_blame.ts). */
  calls?: [number, number][];
}

/** Rank → launcher: the outcome (`returned`: the function returned, the rank is closing). */
export type RankReport =
  | { type: "returned" }
  | { type: "done"; result: unknown; calls?: [number, number][] }
  | ({ type: "error" } & FailureReport);

/**
 * A process rank's report as stdout lines for its launcher: marked lines (see the marks above),
 * `@rank` after the mark when the process runs several ranks (`--threads`), and an error's text
 * on stderr for people.
 */
export function printReport(report: RankReport, rank?: number): void {
  const at = (mark: string) => rank === undefined ? mark : `${mark.trimEnd()}@${rank} `;
  if (report.type === "returned") console.log(at(RETURNED_MARK).trimEnd());
  else if (report.type === "done") {
    if (report.calls) console.log(at(CALLS_MARK) + JSON.stringify(report.calls));
    console.log(at(RESULT_MARK) + JSON.stringify(report.result ?? null));
  } else {
    console.error(`${rank === undefined ? "" : `rank ${rank}: `}${report.name}: ${report.message}`);
    const { type: _, stack: __, ...failure } = report;
    console.log(at(ERROR_MARK) + JSON.stringify(failure));
  }
}

/** A marked stdout line of a process rank: what it says, for which rank (if it names one). */
export type MarkedLine =
  | { kind: "result"; rank?: number; result: unknown }
  | { kind: "calls"; rank?: number; calls: [number, number][] }
  | { kind: "returned"; rank?: number }
  | { kind: "error"; rank?: number; failure: FailureReport }
  | { kind: "port"; port: number };

/** The marks share a prefix (a control character people never type, then `dccl-`). */
const MARK_PREFIX = RETURNED_MARK.slice(0, -"returned".length);
const MARKED = new RegExp(
  `^${MARK_PREFIX}(result|calls|returned|error|port)(?:@(\\d+))?(?: (.*))?$`,
);

/** The marked line `line` is, or undefined for any other line. */
export function parseMarked(line: string): MarkedLine | undefined {
  const m = MARKED.exec(line);
  if (!m) return undefined;
  const rank = m[2] === undefined ? undefined : Number(m[2]);
  const payload = m[3] ?? "";
  switch (m[1]) {
    case "result":
      return { kind: "result", rank, result: JSON.parse(payload) };
    case "calls":
      return { kind: "calls", rank, calls: JSON.parse(payload) };
    case "returned":
      return { kind: "returned", rank };
    case "error":
      return { kind: "error", rank, failure: JSON.parse(payload) };
    default:
      return { kind: "port", port: Number(payload) };
  }
}

/** The report of an error that ended a rank. */
export const failureReport: (err: unknown) => FailureReport = errorReport;

/** How a failure report ends its rank, for the launcher's verdict. */
export function failedEnd(report: FailureReport): Omit<RankEnd, "at"> {
  return {
    status: "failed",
    name: report.name,
    reason: `${report.name}: ${report.message}`,
    blames: report.failedRank,
    accused: report.accused,
    calls: report.calls,
  };
}

/** How a rank's final report ends it, for the launcher's verdict. */
export function reportEnd(report: Exclude<RankReport, { type: "returned" }>): Omit<RankEnd, "at"> {
  return report.type === "done"
    ? { status: "ok", result: report.result, calls: report.calls }
    : failedEnd(report);
}

/**
 * The function `entry` of `module`, which every rank runs as `fn(comm, args)`; a TypeError when
 * the module has none.
 */
export async function rankFunction(
  module: string,
  entry: string,
): Promise<(comm: Communicator, args: unknown) => unknown> {
  const fn = (await import(module))[entry];
  if (typeof fn !== "function") {
    throw new TypeError(`Module ${module} has no exported function ${entry}`);
  }
  return fn;
}

/** What {@linkcode runRank} runs. */
export interface RankRun {
  /** Makes the rank's communicator. */
  connect: () => Promise<Communicator>;
  /** The rank's function. */
  fn: () => Promise<(comm: Communicator, args: unknown) => unknown>;
  /** Its second argument. */
  args: unknown;
  /**
   * Releases what the rank holds beyond its communicator (its WebGPU device) before the last
   * report: a launcher may terminate a worker once it has reported how it ended.
   */
  release?: () => Promise<void>;
}

/**
 * Runs a rank: the communicator `connect` makes, the function `fn` on it, then the communicator's
 * close (which waits for the peers'); tells the launcher through `report` that the function
 * returned, and then, once `release` is done, how the rank ended. On a failure the peers learn
 * why at once (unless this rank failed because of one of them). Resolves whether the rank
 * succeeded.
 */
export async function runRank(
  { connect, fn, args, release }: RankRun,
  report: (r: RankReport) => void,
): Promise<boolean> {
  let comm: Communicator | undefined;
  let end: RankReport;
  try {
    comm = await connect();
    const result = await (await fn())(comm, args);
    report({ type: "returned" });
    await comm[Symbol.asyncDispose]();
    end = { type: "done", result, calls: recentCalls(comm) };
  } catch (err) {
    await comm?.abort(err).catch(() => {});
    end = { type: "error", ...failureReport(err), calls: comm && recentCalls(comm) };
  }
  await release?.().catch(() => {});
  report(end);
  return end.type === "done";
}
