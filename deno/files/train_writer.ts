/**
 * Rank 0's output of a training run on Deno: a header, one aligned line per epoch on stdout, the
 * CSV (every finished epoch's row) and the JSON sidecar (`complete: false` until the summary),
 * each replaced atomically as each epoch ends (deno/files/atomic_file.ts), a progress bar on
 * stderr when it is a terminal, and a closing summary. A file that cannot be written ends the run
 * with an `OutputError` naming it, and neither file is left behind.
 * @module
 */

import { stringify } from "./csv_stringify.ts";
import {
  EPOCH_COLUMNS,
  epochLine,
  type EpochRow,
  epochTitle,
  epochValues,
  progressLine,
  summaryLines,
  type TrainObserver,
  type TrainSummary,
} from "../../trainer/epochs.ts";
import { writeTogether } from "./atomic_file.ts";

/** What rank 0 needs to report. */
export interface TrainReportOptions {
  /** Lines printed (each after `# `) before the first epoch. */
  header: string[];
  /** Epochs the run trains. */
  epochs: number;
  /** The CSV file to write, if any. */
  csv?: string;
  /** The JSON sidecar to write, if any. */
  json?: string;
  /** Where the run came from (machine, date, flags): written into the JSON as given. */
  metadata: object;
  /** Print epoch lines and the summary. @default {true} */
  print?: boolean;
}

/** Writes a run's epochs as they end. */
export class TrainReporter implements TrainObserver {
  readonly #o: TrainReportOptions;
  readonly #rows: EpochRow[] = [];
  readonly #bar: boolean;
  readonly #print: boolean;
  #barDrawn = 0;
  /** When the first epoch began, for the progress bar's ETA. */
  #startedAt = 0;

  /** A writer of the run `options` describe. */
  constructor(options: TrainReportOptions) {
    this.#o = options;
    this.#print = options.print ?? true;
    this.#bar = this.#print && Deno.stderr.isTerminal();
  }

  /** Prints the header and creates the files. */
  start(): void {
    if (this.#print) {
      console.log(this.#o.header.map((l) => `# ${l}`).join("\n"));
      console.log(epochTitle());
    }
    this.#writeFiles();
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
      progressLine({
        epoch,
        epochs: this.#o.epochs,
        step,
        steps,
        loss: loss?.(),
        elapsedMs: now - this.#startedAt,
      })
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
    if (this.#print) console.log(epochLine(row));
    this.#writeFiles();
  }

  /** Prints and stores the summary. */
  finish(summary: TrainSummary): void {
    this.#clearBar();
    this.#writeFiles(summary);
    if (!this.#print || summary.epochs.length === 0) return;
    for (const line of summaryLines(summary)) console.log(`# ${line}`);
  }

  /** Replaces the CSV and the sidecar with every epoch so far. */
  #writeFiles(summary?: TrainSummary): void {
    const sidecar = () => ({
      complete: summary !== undefined,
      metadata: this.#o.metadata,
      columns: EPOCH_COLUMNS,
      units: { time: "s", accuracy: "fraction", loss: "nats per sample" },
      rows: this.#rows,
      summary: summary ?? null,
    });
    writeTogether([
      [this.#o.csv, () => stringify([EPOCH_COLUMNS, ...this.#rows.map(epochValues)])],
      [this.#o.json, () => JSON.stringify(sidecar(), null, 1)],
    ]);
  }

  #clearBar(): void {
    if (this.#bar) Deno.stderr.writeSync(new TextEncoder().encode("\r\x1b[2K"));
  }
}
