/**
 * Rank 0's output of a training run on Deno: a header, one aligned line per epoch on stdout, the
 * CSV (one complete row per epoch, appended as each ends), the JSON sidecar (rewritten
 * atomically), a progress bar on stderr when it is a terminal, and a closing summary.
 * @module
 */

import { stringify } from "csv-stringify/sync";
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
    if (this.#o.csv) {
      Deno.writeTextFileSync(this.#o.csv, stringify([epochValues(row)]), { append: true });
    }
    this.#writeJson();
  }

  /** Prints and stores the summary. */
  finish(summary: TrainSummary): void {
    this.#clearBar();
    this.#writeJson(summary);
    if (!this.#print || summary.epochs.length === 0) return;
    for (const line of summaryLines(summary)) console.log(`# ${line}`);
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
