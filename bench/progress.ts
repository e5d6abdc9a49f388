/**
 * The time a run has left, at its pace so far, as the progress bars of the benchmark, the sweep
 * and the trainer show it.
 * @module
 */

/**
 * `ETA 1m05s` for a run `done` (a fraction) of the way through after `elapsedMs`; "" before
 * anything is done.
 */
export function timeLeft(elapsedMs: number, done: number): string {
  if (!(done > 0) || !(elapsedMs > 0)) return "";
  const left = Math.round((elapsedMs * (1 - done)) / done / 1000);
  return `ETA ${
    left >= 60 ? `${Math.floor(left / 60)}m${String(left % 60).padStart(2, "0")}s` : `${left}s`
  }`;
}
