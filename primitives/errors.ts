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
  /** Creates a PeerFailedError naming the failed rank. */
  constructor(failedRank: number, reason: string) {
    super(`Rank ${failedRank} failed: ${reason}`, { failedRank });
    this.name = "PeerFailedError";
  }
}

/** Thrown by a launcher: the first rank that failed, with its original error as `cause`. */
export class RankFailedError extends CommError {
  /** Creates a RankFailedError. */
  constructor(rank: number, message: string, cause?: unknown) {
    super(`Rank ${rank} failed: ${message}`, { failedRank: rank, cause });
    this.name = "RankFailedError";
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
