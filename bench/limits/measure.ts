/**
 * How every limit is measured, as the harness measures a size: a warm-up that takes the code
 * through the JIT's tiers, then timed trials of equal length; the median is the value, the
 * fastest and slowest trials its spread (docs/measuring.md, "The machine's limits").
 * @module
 */

/** A measured limit: the median over trials, and the spread of the trials (fastest, slowest). */
export interface Sampled {
  /** The median trial. */
  median: number;
  /** The smallest trial. */
  min: number;
  /** The largest trial. */
  max: number;
  /** How many trials. */
  trials: number;
}

/** The median and spread of `values` (at least one). */
export function summarize(values: readonly number[]): Sampled {
  const sorted = values.toSorted((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return { median, min: sorted[0], max: sorted.at(-1)!, trials: sorted.length };
}

/** Options of {@linkcode timeTrials}. */
export interface TrialOptions {
  /** Timed trials. @default {9} */
  trials?: number;
  /** Each trial's length, ms. @default {30} */
  trialMs?: number;
  /** The warm-up's length, ms. @default {100} */
  warmupMs?: number;
}

/**
 * Times `op` (its work returns how many units it did) in trials of about `trialMs` each, after a
 * warm-up; resolves with units per second of each trial. `op` may be async.
 */
export async function timeTrials(
  op: () => number | Promise<number>,
  options: TrialOptions = {},
): Promise<number[]> {
  const { trials = 9, trialMs = 30, warmupMs = 100 } = options;
  const warmEnd = performance.now() + warmupMs;
  while (performance.now() < warmEnd) await op();
  const rates: number[] = [];
  for (let t = 0; t < trials; t++) {
    let units = 0;
    const start = performance.now();
    let now = start;
    while (now - start < trialMs) {
      units += await op();
      now = performance.now();
    }
    rates.push(units / ((now - start) / 1000));
  }
  return rates;
}
