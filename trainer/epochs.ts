/**
 * A training run's epochs and totals as every runtime shows them: the row of one epoch, its CSV
 * columns, the aligned line the CLI prints, the progress bar's text and the run's summary. Deno
 * prints and writes them (deno/files/train_writer.ts); a browser tab draws them.
 * @module
 */

/** One epoch, aggregated over ranks. */
export interface EpochRow {
  /** The epoch, from 1. */
  epoch: number;
  /** The epoch's training loop, seconds, slowest rank. */
  time_s: number;
  /** Computation (forward, backward, update, batch gathering), seconds, most of any rank. */
  compute_s: number;
  /** Communication (collectives and the copies around them), seconds, most of any rank. */
  comm_s: number;
  /** Communication beyond the least any rank spent: waiting for others, seconds, most of any rank. */
  wait_s: number;
  /** Mean training cross-entropy over the epoch. */
  loss: number;
  /** Training accuracy over the epoch (as the model went), fraction. */
  train_acc: number;
  /** Test accuracy after the epoch, fraction. */
  test_acc: number;
  /** Mean test cross-entropy after the epoch. */
  test_loss: number;
  /** Training rows per second of `time_s`, all ranks together. */
  samples_per_s: number;
  /**
   * `allreduce`: the share of a sync step's communication the backward pass hid, percent (OSU's
   * overlap, against one sync step in eight, reduced after the backward alone).
   */
  hidden_pct?: number;
  /** Parameter server, asynchronous: the mean staleness of the epoch's pushes. */
  staleness_mean?: number;
  /** Parameter server, asynchronous: the largest staleness of the epoch's pushes. */
  staleness_max?: number;
}

/** CSV columns, in order (the issue's first eight, then extras). */
export const EPOCH_COLUMNS: (keyof EpochRow)[] = [
  "epoch",
  "time_s",
  "compute_s",
  "comm_s",
  "wait_s",
  "loss",
  "train_acc",
  "test_acc",
  "test_loss",
  "samples_per_s",
  "staleness_mean",
  "staleness_max",
  "hidden_pct",
];

/** The run's totals, returned to the launcher and stored in the JSON sidecar. */
export interface TrainSummary {
  /** Every epoch's row. */
  epochs: EpochRow[];
  /** Sum of the epochs' `time_s`. */
  train_s: number;
  /** Test accuracy after the last epoch. */
  final_test_acc: number;
  /** Per step of one rank, milliseconds: the split of the slowest rank's time. */
  step_ms: { compute: number; comm: number; wait: number };
  /** Floating-point operations (2 per multiply-add) per second of computation, per computing rank. */
  gflops_per_rank: number;
  /**
   * The WebAssembly SIMD peak measured on rank 0 as training ended (GFLOP/s, one thread), which
   * `gflops_per_rank` is read against; absent for device training.
   */
  peak_gflops?: number;
  /** The kernels that computed (WebAssembly with relaxed SIMD, or WGSL). */
  kernels: string;
  /** Allreduce calls rank 0 made to synchronise (a resumed run counts its own part). */
  allreduce_calls: number;
  /** The epochs' mean `hidden_pct`, where they have one. */
  hidden_pct?: number;
}

const TABLE: [keyof EpochRow, string, number, (v: number) => string][] = [
  ["epoch", "epoch", 5, (v) => String(v)],
  ["loss", "loss", 8, (v) => v.toFixed(4)],
  ["train_acc", "train", 8, (v) => `${(100 * v).toFixed(2)}%`],
  ["test_acc", "test", 8, (v) => `${(100 * v).toFixed(2)}%`],
  ["time_s", "time_s", 8, (v) => v.toFixed(3)],
  ["compute_s", "compute_s", 10, (v) => v.toFixed(3)],
  ["comm_s", "comm_s", 8, (v) => v.toFixed(3)],
  ["wait_s", "wait_s", 8, (v) => v.toFixed(3)],
];

/** Where a run is, for the progress bar. */
export interface Progress {
  /** The epoch, from 0, of `epochs`. */
  epoch: number;
  /** Epochs in the run. */
  epochs: number;
  /** Steps done of the epoch's `steps`. */
  step: number;
  /** Steps in the epoch. */
  steps: number;
  /** The epoch's running loss, where there is one. */
  loss?: number;
  /** Milliseconds since the first step. */
  elapsedMs: number;
}

/**
 * The progress bar's text: `[###....] epoch 2/10, step 40/120, loss 0.3127, ETA 1m05s` (no ETA
 * before there is a pace to go by).
 */
export function progressLine({ epoch, epochs, step, steps, loss, elapsedMs }: Progress): string {
  const width = 30, filled = Math.round((step / steps) * width);
  const done = (epoch + step / steps) / epochs;
  const left = done > 0 && elapsedMs > 0
    ? Math.round((elapsedMs * (1 - done)) / done / 1000)
    : undefined;
  // The same words as the benchmark's bar (bench/progress.ts; bench and trainer stay apart).
  const eta = left === undefined
    ? ""
    : `ETA ${
      left >= 60 ? `${Math.floor(left / 60)}m${String(left % 60).padStart(2, "0")}s` : `${left}s`
    }`;
  return `[${"#".repeat(filled)}${".".repeat(width - filled)}] epoch ${epoch + 1}/${epochs}, ` +
    `step ${step}/${steps}${loss === undefined ? "" : `, loss ${loss.toFixed(4)}`}` +
    (eta ? `, ${eta}` : "");
}

/** The epoch table's title line. */
export function epochTitle(): string {
  return TABLE.map(([, t, w]) => t.padStart(w)).join(" ");
}

/**
 * One epoch's line of the table (with the staleness of asynchronous parameter servers, and the
 * share of communication an allreduce hid).
 */
export function epochLine(row: EpochRow): string {
  const cells = TABLE.map(([key, , w, f]) => f(row[key] as number).padStart(w));
  const stale = row.staleness_mean === undefined
    ? ""
    : `  staleness mean ${row.staleness_mean.toFixed(2)} max ${row.staleness_max}`;
  const hidden = row.hidden_pct === undefined ? "" : `  hidden ${row.hidden_pct.toFixed(0)}%`;
  return cells.join(" ") + stale + hidden;
}

/** One epoch's CSV values, in {@linkcode EPOCH_COLUMNS}' order. */
export function epochValues(row: EpochRow): (number | string)[] {
  return EPOCH_COLUMNS.map((c) => {
    const v = row[c];
    return v === undefined ? "" : Number.isInteger(v) ? v : Number(v.toPrecision(6));
  });
}

/** `n epochs`, or `1 epoch`. */
export function epochsName(n: number): string {
  return `${n} epoch${n === 1 ? "" : "s"}`;
}

/** The summary's closing lines: throughput, accuracy and the split of a step. */
export function summaryLines(summary: TrainSummary): string[] {
  const samples = summary.epochs.reduce((s, r) => s + r.samples_per_s * r.time_s, 0);
  const { compute, comm, wait } = summary.step_ms;
  return [
    `trained ${epochsName(summary.epochs.length)} in ${summary.train_s.toFixed(2)} s ` +
    `(${Math.round(samples / summary.train_s)} samples/s); test accuracy ` +
    `${(100 * summary.final_test_acc).toFixed(2)}%`,
    `per step: compute ${compute.toFixed(3)} ms, communication ${comm.toFixed(3)} ms ` +
    `(waiting ${wait.toFixed(3)} ms)${
      summary.hidden_pct === undefined
        ? ""
        : `, the backward hiding ${summary.hidden_pct.toFixed(0)}% of the allreduce`
    }; computation at ${summary.gflops_per_rank.toFixed(1)} ` +
    `GFLOP/s per rank${
      summary.peak_gflops
        ? `, ${(100 * summary.gflops_per_rank / summary.peak_gflops).toFixed(0)}% of the ` +
          `${summary.peak_gflops.toFixed(1)} GFLOP/s WebAssembly SIMD peak`
        : ""
    } (${summary.kernels} kernels)`,
  ];
}

/** What rank 0's runtime does with a run's progress (prints it, writes it, draws it). */
export interface TrainObserver {
  /** Before the first epoch. */
  start(): void;
  /** Progress through an epoch; `loss` gives the running loss when asked. */
  progress(epoch: number, step: number, steps: number, loss?: () => number | undefined): void;
  /** A remark above the next epoch's line. */
  note(text: string): void;
  /** An epoch ended. */
  add(row: EpochRow): void;
  /** The run ended. */
  finish(summary: TrainSummary): void;
}
