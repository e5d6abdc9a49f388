/**
 * Rank 0's output of a sweep on Deno: the aligned table on stdout, the CSV (the complete rows so
 * far) and the JSON sidecar (`complete: false` until the last size), each replaced atomically
 * after every size (deno/files/atomic_file.ts), and a progress bar on stderr when it is a
 * terminal. A file that cannot be written ends the sweep with an `OutputError` naming it, and
 * neither file is left behind.
 * @module
 */

import { stringify } from "./csv_stringify.ts";
import type { SizeResult } from "../../bench/harness.ts";
import {
  CSV_HEADER,
  csvValues,
  layoutOf,
  type ReportOptions,
  sidecar,
  sizeName,
  type SweepSink,
  type TableLayout,
} from "../../bench/report_format.ts";
import { writeTogether } from "./atomic_file.ts";
import { timeLeft } from "../../bench/progress.ts";

/** Writes one sweep's results as they arrive. */
export class SweepWriter implements SweepSink {
  #o: ReportOptions;
  #table: TableLayout;
  #results: SizeResult[] = [];
  #bar: boolean;
  #startedAt = performance.now();

  /** A writer of the sweep `options` describe. */
  constructor(options: ReportOptions) {
    this.#o = options;
    this.#table = layoutOf(options);
    this.#bar = Deno.stderr.isTerminal();
  }

  /** Prints the header and creates the files (the CSV with its header row). */
  start(): void {
    if (this.#o.table) {
      // OSU's scripts read its own header alone; the JSON sidecar says what ran.
      if (!this.#o.osu) console.log(this.#o.header.map((l) => `# ${l}`).join("\n"));
      console.log(this.#table.title);
    }
    this.#writeFiles();
    this.#drawBar();
  }

  /** Adds one size's result everywhere. */
  add(result: SizeResult): void {
    this.#results.push(result);
    this.#clearBar();
    if (this.#o.table) {
      console.log(this.#table.line(result.row));
    }
    this.#writeFiles();
    this.#drawBar();
  }

  /** Removes the progress bar and prints the table's footer. */
  finish(): void {
    this.#clearBar();
    if (!this.#o.table || this.#results.length === 0) return;
    const footer = this.#table.footer(this.#results.map((r) => r.row));
    if (footer) console.log(footer);
  }

  /** Replaces the CSV and the sidecar with every row so far. */
  #writeFiles(): void {
    const results = this.#results, complete = results.length === this.#o.counts.length;
    writeTogether([
      [this.#o.csv, () => stringify([CSV_HEADER, ...results.map((r) => csvValues(r.row))])],
      [
        this.#o.json,
        () => JSON.stringify(sidecar(this.#o.metadata, results, { complete }), null, 1),
      ],
    ]);
  }

  #drawBar(): void {
    if (!this.#bar) return;
    const done = this.#results.length, counts = this.#o.counts, width = 30;
    const filled = Math.round((done / Math.max(counts.length, 1)) * width);
    const bar = "#".repeat(filled) + ".".repeat(width - filled);
    const next = done < counts.length ? `, measuring ${sizeName(counts[done])} elements` : "";
    const eta = timeLeft(performance.now() - this.#startedAt, done / counts.length);
    const line = `\r\x1b[2K[${bar}] ${done}/${counts.length} sizes${next}${eta ? `, ${eta}` : ""}`;
    Deno.stderr.writeSync(new TextEncoder().encode(line));
  }

  #clearBar(): void {
    if (this.#bar) Deno.stderr.writeSync(new TextEncoder().encode("\r\x1b[2K"));
  }
}
