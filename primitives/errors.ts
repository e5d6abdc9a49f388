/**
 * Errors that mean "this communicator is broken; recreate it".
 * Bad arguments use the built-in `RangeError` and `TypeError` instead.
 * @module
 */

/** Base class of failures of the communication fabric itself. */
export class CommError extends Error {
  /** The rank whose failure caused this error, when known. */
  readonly failedRank: number | undefined;
  /** Creates a CommError. */
  constructor(message: string, options: { failedRank?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = "CommError";
    this.failedRank = options.failedRank;
  }
}

/** A pending operation waited longer than the communicator's timeout. */
export class CommTimeoutError extends CommError {
  /** Creates a CommTimeoutError. */
  constructor(message: string, options: { failedRank?: number } = {}) {
    super(message, options);
    this.name = "CommTimeoutError";
  }
}

/** A peer rank died, threw, or closed its connection. */
export class PeerFailedError extends CommError {
  /** Why the peer failed, without the "Rank N failed" prefix. */
  readonly reason: string;
  /**
   * The peer (`failedRank`) told this rank that this rank failed: the error names the accuser
   * (its notice is the only evidence), not a rank that failed on its own.
   */
  readonly accused: boolean;
  /** Creates a PeerFailedError naming the failed rank (or the accusing one, see `accused`). */
  constructor(failedRank: number, reason: string, options: { accused?: boolean } = {}) {
    super(`Rank ${failedRank} failed: ${reason}`, { failedRank });
    this.name = "PeerFailedError";
    this.reason = reason;
    this.accused = options.accused ?? false;
  }
}

/**
 * The error a rank raises when `sender` tells it that `failedRank` failed: a `PeerFailedError`
 * naming that rank, or, when the notice names the receiver itself (a peer timed out waiting for
 * it), one naming the sender, which gave up on it.
 */
export function noticeError(
  rank: number,
  sender: number | undefined,
  failedRank: number,
  reason: string,
): PeerFailedError {
  if (failedRank !== rank || sender === undefined || sender === rank) {
    return new PeerFailedError(failedRank, reason);
  }
  return new PeerFailedError(sender, `it gave up on rank ${rank}: ${reason}`, { accused: true });
}

/**
 * What to tell peers when `error` ends this rank's part in a group: the rank that failed (the one
 * the error names, else `rank`) and why, so each peer can raise its own `PeerFailedError`.
 */
export function failureNotice(
  error: unknown,
  rank: number,
): { failedRank: number; reason: string } {
  if (error instanceof PeerFailedError) {
    return { failedRank: error.failedRank!, reason: error.reason };
  }
  const e = error instanceof Error ? error : new Error(String(error));
  return {
    failedRank: (e as { failedRank?: number }).failedRank ?? rank,
    reason: `${e.name}: ${e.message}`,
  };
}

/** How one rank of a group ended, as its launcher saw it. */
export interface RankOutcome {
  /**
   * `ok`: it returned `result`; `failed`: it threw or exited non-zero; `killed`: it was terminated
   * from outside; `stuck`: it did not finish in time after the others had; `stopped`: the launcher
   * stopped it after another rank failed.
   */
  status: "ok" | "failed" | "killed" | "stuck" | "stopped";
  /** What it returned (`ok`). */
  result?: unknown;
  /** Why it ended (every other status), e.g. `Error: boom`. */
  reason?: string;
}

/**
 * Thrown by a launcher: the rank that caused the group to fail (not the ones that failed only
 * because it did), with its original error as `cause` and how every rank ended in `outcomes`.
 */
export class RankFailedError extends CommError {
  /** How each rank ended, by rank. */
  readonly outcomes: readonly RankOutcome[];
  /** Creates a RankFailedError. */
  constructor(rank: number, message: string, cause?: unknown, outcomes: RankOutcome[] = []) {
    super(`Rank ${rank} failed: ${message}`, { failedRank: rank, cause });
    this.name = "RankFailedError";
    this.outcomes = outcomes;
  }
}

/** Data from a peer did not match what this rank expected (count, dtype or collective differ). */
export class MismatchError extends CommError {
  /** Creates a MismatchError. */
  constructor(message: string, options: { failedRank?: number } = {}) {
    super(message, options);
    this.name = "MismatchError";
  }
}

/** An error as it crosses to another thread or process: what telling and rebuilding it takes. */
export interface ErrorReport {
  /** The error's name. */
  name: string;
  /** The error's message. */
  message: string;
  /** Its stack, where the runtime gives one. */
  stack?: string;
  /** The rank the error names as the cause. */
  failedRank?: number;
  /** Peers told this rank that it failed: `failedRank` is the one that said so. */
  accused?: boolean;
}

/** `err` as a report another thread can rebuild it from ({@linkcode errorFromReport}). */
export function errorReport(err: unknown): ErrorReport {
  const e = err instanceof Error ? err : new Error(String(err));
  return {
    name: e.name,
    message: e.message,
    stack: e.stack,
    failedRank: (e as { failedRank?: number }).failedRank,
    accused: e instanceof PeerFailedError ? e.accused : undefined,
  };
}

/** The error `report` describes, of its class where it is one of dccl's or a built-in. */
export function errorFromReport(report: ErrorReport): Error {
  const { name, message, failedRank, accused } = report;
  const peer = /^Rank \d+ failed: ([^]*)$/.exec(message);
  const e = name === "PeerFailedError" && failedRank !== undefined && peer
    ? new PeerFailedError(failedRank, peer[1], { accused })
    : name === "MismatchError"
    ? new MismatchError(message, { failedRank })
    : name === "CommTimeoutError"
    ? new CommTimeoutError(message, { failedRank })
    : name === "CommError" || name === "RankFailedError"
    ? new CommError(message, { failedRank })
    : name === "RangeError"
    ? new RangeError(message)
    : name === "TypeError"
    ? new TypeError(message)
    : Object.assign(new Error(message), { name });
  if (report.stack) e.stack = report.stack;
  return e;
}
