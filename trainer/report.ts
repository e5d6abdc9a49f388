/**
 * Rank 0's output of a training run: a header, one aligned line per epoch on stdout, the CSV (one
 * complete row per epoch, appended as each ends), the JSON sidecar (rewritten atomically), a
 * progress bar on stderr when it is a terminal, and a closing summary.
 * @module
 */

import { stringify } from "csv-stringify/sync";

/** One epoch, aggregated over ranks. */
export interface EpochRow {
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
  /** Parameter server, asynchronous: mean and largest staleness of the epoch's pushes. */
  staleness_mean?: number;
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
];

/** What rank 0 needs to report. */
export interface TrainReportOptions {
  /** Lines printed (each after `# `) before the first epoch. */
  header: string[];
  epochs: number;
  csv?: string;
  json?: string;
  /** Where the run came from (machine, date, flags): written into the JSON as given. */
  metadata: object;
  /** Print epoch lines and the summary. @default {true} */
  print?: boolean;
}

/** The run's totals, returned to the launcher and stored in the JSON sidecar. */
export interface TrainSummary {
  epochs: EpochRow[];
  /** Sum of the epochs' `time_s`. */
  train_s: number;
  final_test_acc: number;
  /** Per step of one rank, milliseconds: the split of the slowest rank's time. */
  step_ms: { compute: number; comm: number; wait: number };
  /** Floating-point operations (2 per multiply-add) per second of computation, per computing rank. */
  gflops_per_rank: number;
  kernels: string;
  /** Allreduce calls rank 0 made to synchronise (a resumed run counts its own part). */
  allreduce_calls: number;
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

/**
 * The progress bar's text: `[###....] epoch 2/10, step 40/120, loss 0.3127, ETA 1m05s` (`elapsedMs`
 * since the first step; no ETA before there is a pace to go by).
 */
export function progressLine(
  epoch: number,
  step: number,
  steps: number,
  epochs: number,
  loss: number | undefined,
  elapsedMs: number,
): string {
  const width = 30, filled = Math.round((step / steps) * width);
  const done = (epoch + step / steps) / epochs;
  const left = done > 0 && elapsedMs > 0
    ? Math.round((elapsedMs * (1 - done)) / done / 1000)
    : undefined;
  const eta = left === undefined
    ? ""
    : `, ETA ${
      left >= 60 ? `${Math.floor(left / 60)}m${String(left % 60).padStart(2, "0")}s` : `${left}s`
    }`;
  return `[${"#".repeat(filled)}${".".repeat(width - filled)}] epoch ${epoch + 1}/${epochs}, ` +
    `step ${step}/${steps}${loss === undefined ? "" : `, loss ${loss.toFixed(4)}`}${eta}`;
}

/** Writes a run's epochs as they end. */
export class TrainReporter {
  readonly #o: TrainReportOptions;
  readonly #rows: EpochRow[] = [];
  readonly #bar: boolean;
  readonly #print: boolean;
  #barDrawn = 0;
  /** When the first epoch began, for the progress bar's ETA. */
  #startedAt = 0;

  constructor(options: TrainReportOptions) {
    this.#o = options;
    this.#print = options.print ?? true;
    this.#bar = this.#print && Deno.stderr.isTerminal();
  }

  /** Prints the header and creates the files. */
  start(): void {
    if (this.#print) {
      console.log(this.#o.header.map((l) => `# ${l}`).join("\n"));
      console.log(TABLE.map(([, t, w]) => t.padStart(w)).join(" "));
    }
    if (this.#o.csv) Deno.writeTextFileSync(this.#o.csv, stringify([EPOCH_COLUMNS]));
    this.#writeJson();
  }

  /**
   * Shows progress through an epoch (at most ten times a second) with the epoch's running loss
   * where `loss` gives it (asked only when the bar is drawn), and the time left at the pace so far.
   */
  progress(epoch: number, step: number, steps: number, loss?: () => number | undefined): void {
    if (!this.#bar) return;
    const now = performance.now();
    if (epoch === 0 && step <= 1) this.#startedAt = now;
    if (now - this.#barDrawn < 100 && step < steps) return;
    this.#barDrawn = now;
    const line = `\r\x1b[2K${
      progressLine(epoch, step, steps, this.#o.epochs, loss?.(), now - this.#startedAt)
    }`;
    Deno.stderr.writeSync(new TextEncoder().encode(line));
  }

  /** Prints `text` as a comment line above the next epoch's. */
  note(text: string): void {
    if (this.#print) console.log(`# ${text}`);
  }

  /** Adds one epoch everywhere. */
  add(row: EpochRow): void {
    this.#rows.push(row);
    this.#clearBar();
    if (this.#print) {
      const cells = TABLE.map(([key, , w, f]) => f(row[key] as number).padStart(w));
      const stale = row.staleness_mean === undefined
        ? ""
        : `  staleness mean ${row.staleness_mean.toFixed(2)} max ${row.staleness_max}`;
      console.log(cells.join(" ") + stale);
    }
    if (this.#o.csv) {
      const values = EPOCH_COLUMNS.map((c) => {
        const v = row[c];
        return v === undefined ? "" : Number.isInteger(v) ? v : Number(v.toPrecision(6));
      });
      Deno.writeTextFileSync(this.#o.csv, stringify([values]), { append: true });
    }
    this.#writeJson();
  }

  /** Prints and stores the summary. */
  finish(summary: TrainSummary): void {
    this.#clearBar();
    this.#writeJson(summary);
    if (!this.#print || summary.epochs.length === 0) return;
    const samples = summary.epochs.reduce((s, r) => s + r.samples_per_s * r.time_s, 0);
    const { compute, comm, wait } = summary.step_ms;
    console.log(
      `# trained ${summary.epochs.length} epochs in ${summary.train_s.toFixed(2)} s ` +
        `(${Math.round(samples / summary.train_s)} samples/s); test accuracy ` +
        `${(100 * summary.final_test_acc).toFixed(2)}%`,
    );
    console.log(
      `# per step: compute ${compute.toFixed(3)} ms, communication ${comm.toFixed(3)} ms ` +
        `(waiting ${wait.toFixed(3)} ms); computation at ${summary.gflops_per_rank.toFixed(1)} ` +
        `GFLOP/s per rank (${summary.kernels} kernels)`,
    );
  }

  #writeJson(summary?: TrainSummary): void {
    const path = this.#o.json;
    if (!path) return;
    const doc = {
      metadata: this.#o.metadata,
      columns: EPOCH_COLUMNS,
      units: { time: "s", accuracy: "fraction", loss: "nats per sample" },
      rows: this.#rows,
      summary: summary ?? null,
    };
    Deno.writeTextFileSync(`${path}.tmp`, JSON.stringify(doc, null, 1));
    Deno.renameSync(`${path}.tmp`, path);
  }

  #clearBar(): void {
    if (this.#bar) Deno.stderr.writeSync(new TextEncoder().encode("\r\x1b[2K"));
  }
}
