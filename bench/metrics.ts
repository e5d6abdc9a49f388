/**
 * The metric formulas of docs/design.md ("Metrics"), in one place: time per operation averaged over
 * ranks, Gb/s, nccl-tests' algbw and busbw, and the percentiles of per-iteration samples.
 * @module
 */

/** One row of results: the CSV columns of docs/design.md, in order, then the appended extras. */
export interface ResultRow {
  /** The primitive measured. */
  primitive: string;
  /** The transport's name. */
  transport: string;
  /** Memory kind of the buffers. */
  memory: string;
  /** The algorithm asked for (`auto` or a name). */
  algorithm: string;
  /** Ranks. */
  procs: number;
  /** Elements of the buffer (`count` in the CSV). */
  floats: number;
  /** Bytes of the buffer (the whole buffer for the block primitives). */
  bytes: number;
  /** Timed iterations. */
  iters: number;
  /** Sum over ranks of each rank's total time / (ranks × iters), µs. */
  time_us: number;
  /** Fastest rank's total time / iters, µs. */
  min_us: number;
  /** Slowest rank's total time / iters, µs. */
  max_us: number;
  /** Payload bits per second / 1e9. */
  gbps: number;
  /** Payload bytes per second / 1e9. */
  algbw_gbs: number;
  /** algbw × the primitive's bus factor. */
  busbw_gbs: number;
  /** Elements, summed over ranks, that differ from the exact expected result. */
  wrong: number;
  /** `back-to-back` or `per-iter`. */
  timing: string;
  /** Median of the per-iteration samples, µs. */
  p50_us: number;
  /** 99th percentile of the per-iteration samples, µs. */
  p99_us: number;
  /** The fastest per-iteration sample, µs (the best case beside the median). */
  best_us: number;
  /** 90th percentile of the per-iteration samples, µs. */
  p90_us: number;
  /**
   * 99.9th percentile of the per-iteration samples, µs; absent under
   * {@linkcode P999_MIN_SAMPLES} samples, where it would be the slowest sample by another name.
   */
  p999_us?: number;
  /** The algorithm that ran (what `auto` picked at this size). */
  picked: string;
  /** Managed memory: page runs migrated per operation, summed over ranks. */
  migrations: number;
  /** Managed memory: bytes migrated per operation, summed over ranks. */
  migrated_bytes: number;
  /** `--touch`: µs per operation spent touching the buffers, measured apart and subtracted. */
  touch_us: number;
  /** Ranks per process of a hierarchical group (`--threads`; `procs` counts every rank). */
  threads: number;
  /** The element type (`--dtype`). */
  dtype: string;
  /** The reduce op (`--op`); `none` where the primitive has none. */
  op: string;
  /** The root rank (`--root`); −1 where the primitive has none. */
  root: number;
  /**
   * The in-place form's time per op, as the out-of-place one
   * above; absent where the primitive has none or `--out-of-place-only` left it out.
   */
  inplace_time_us?: number;
  /** The in-place form's Gb/s. */
  inplace_gbps?: number;
  /** The in-place form's algbw. */
  inplace_algbw_gbs?: number;
  /** The in-place form's busbw. */
  inplace_busbw_gbs?: number;
  /** The in-place form's wrong elements. */
  inplace_wrong?: number;
  /**
   * The share of this machine's limit the row reaches, percent (bench/limits): its time against
   * the floor and ceiling of its transport; absent where no limits were measured.
   */
  pct_limit?: number;
  /** A point-to-point test's messages per second, every stream together (osu_mbw_mr's). */
  msg_rate?: number;
  /** An overlap test's µs per op with computation between issue and await (OSU's overall). */
  overall_us?: number;
  /** An overlap test's µs per op of the computation alone (OSU's compute). */
  compute_us?: number;
  /** How much of the call hid behind the computation, percent (OSU's overlap). */
  overlap_pct?: number;
  /** alltoallv: bytes the busiest rank sends or receives. */
  busiest_bytes?: number;
  /** alltoallv: the busiest rank's bytes over a balanced run's (1: balanced). */
  imbalance?: number;
  /** A skewed alltoallv: µs per op of the balanced run of the same total, timed beside it. */
  balanced_us?: number;
  /** A skewed alltoallv: its time over the balanced run's. */
  slowdown?: number;
}

/**
 * CSV columns fixed by docs/design.md; never reordered. The sixth, elements per buffer, is
 * `count` (as nccl-tests calls it; older files call it `floats`, and every reader takes either).
 */
export const CSV_COLUMNS = [
  "primitive",
  "transport",
  "memory",
  "algorithm",
  "procs",
  "count",
  "bytes",
  "iters",
  "time_us",
  "min_us",
  "max_us",
  "gbps",
  "algbw_gbs",
  "busbw_gbs",
  "wrong",
] as const;

/** Columns appended after the fixed ones. */
export const EXTRA_COLUMNS = [
  "timing",
  "p50_us",
  "p99_us",
  "picked",
  "migrations",
  "migrated_bytes",
  "touch_us",
  "threads",
  "type",
  "redop",
  "root",
  "inplace_time_us",
  "inplace_gbps",
  "inplace_algbw_gbs",
  "inplace_busbw_gbs",
  "inplace_wrong",
  "pct_limit",
  "best_us",
  "p90_us",
  "p999_us",
  "msg_rate",
  "overall_us",
  "compute_us",
  "overlap_pct",
  "busiest_bytes",
  "imbalance",
  "balanced_us",
  "slowdown",
] as const;

/** The row field behind each CSV column whose name differs from it (nccl-tests' names). */
export const FIELD_OF_COLUMN: Readonly<Record<string, keyof ResultRow>> = {
  count: "floats",
  type: "dtype",
  redop: "op",
};

/** What one size's measurement produced across ranks. */
export interface Measured {
  /** Each rank's total time over the timed iterations, µs. */
  rankTotalsUs: number[];
  /** Timed iterations. */
  iters: number;
  /** Bytes of the buffer. */
  bytes: number;
  /** The primitive's bus factor on these ranks. */
  busFactor: number;
}

/** The time and bandwidth columns from per-rank totals. */
export function metrics(m: Measured): Pick<
  ResultRow,
  "time_us" | "min_us" | "max_us" | "gbps" | "algbw_gbs" | "busbw_gbs"
> {
  const ranks = m.rankTotalsUs.length;
  const timeUs = m.rankTotalsUs.reduce((s, t) => s + t, 0) / (ranks * m.iters);
  const algbw = timeUs > 0 ? m.bytes / (timeUs * 1e3) : 0; // bytes/µs / 1e3 = GB/s
  return {
    time_us: timeUs,
    min_us: Math.min(...m.rankTotalsUs) / m.iters,
    max_us: Math.max(...m.rankTotalsUs) / m.iters,
    gbps: algbw * 8,
    algbw_gbs: algbw,
    busbw_gbs: algbw * m.busFactor,
  };
}

/** Samples a p99.9 needs to be more than the slowest one: a thousand. */
export const P999_MIN_SAMPLES = 1000;

/** The percentile columns of `samples` (µs): best, p50, p90, p99, and p99.9 where enough. */
export function percentiles(
  samples: ArrayLike<number>,
): Pick<ResultRow, "best_us" | "p50_us" | "p90_us" | "p99_us" | "p999_us"> {
  const sorted = Float64Array.from(samples).sort();
  return {
    best_us: atQuantile(sorted, 0),
    p50_us: atQuantile(sorted, 0.5),
    p90_us: atQuantile(sorted, 0.9),
    p99_us: atQuantile(sorted, 0.99),
    ...(sorted.length >= P999_MIN_SAMPLES && { p999_us: atQuantile(sorted, 0.999) }),
  };
}

/** The `q`-quantile (0 … 1) of `samples` by nearest rank; NaN when there are none. */
export function percentile(samples: ArrayLike<number>, q: number): number {
  return atQuantile(Float64Array.from(samples).sort(), q);
}

/** The `q`-quantile of samples already in ascending order, by nearest rank (NaN for none). */
function atQuantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}
