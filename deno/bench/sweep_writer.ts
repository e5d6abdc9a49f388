/**
 * Rank 0's output of a sweep on Deno: the aligned table on stdout, the CSV (complete rows only,
 * appended as each size finishes), the JSON sidecar (rewritten atomically after each size) and a
 * progress bar on stderr when it is a terminal.
 * @module
 */

import { stringify } from "csv-stringify/sync";
import type { SizeResult } from "../../bench/harness.ts";
import {
  CSV_HEADER,
  csvValues,
  type ReportOptions,
  sidecar,
  sizeName,
  type SweepSink,
  tableLayout,
} from "../../bench/report_format.ts";

/** Writes one sweep's results as they arrive. */
export class SweepWriter implements SweepSink {
  #o: ReportOptions;
  #table: ReturnType<typeof tableLayout>;
  #results: SizeResult[] = [];
  #bar: boolean;

  /** A writer of the sweep `options` describe. */
  constructor(options: ReportOptions) {
    this.#o = options;
    this.#table = tableLayout(options.percentiles);
    this.#bar = Deno.stderr.isTerminal();
  }

  /** Prints the header and creates the files (the CSV with its header row). */
  start(): void {
    if (this.#o.table) {
      console.log(this.#o.header.map((l) => `# ${l}`).join("\n"));
      console.log(this.#table.title);
    }
    if (this.#o.csv) Deno.writeTextFileSync(this.#o.csv, stringify([CSV_HEADER]));
    this.#writeJson();
    this.#drawBar();
  }

  /** Adds one size's result everywhere. */
  add(result: SizeResult): void {
    this.#results.push(result);
    this.#clearBar();
    if (this.#o.table) {
      console.log(this.#table.line(result.row));
    }
    if (this.#o.csv) {
      Deno.writeTextFileSync(this.#o.csv, stringify([csvValues(result.row)]), { append: true });
    }
    this.#writeJson();
    this.#drawBar();
  }

  /** Removes the progress bar. */
  finish(): void {
    this.#clearBar();
  }

  #writeJson(): void {
    const path = this.#o.json;
    if (!path) return;
    // Write then rename, so the sidecar is always a complete document.
    Deno.writeTextFileSync(
      `${path}.tmp`,
      JSON.stringify(sidecar(this.#o.metadata, this.#results), null, 1),
    );
    Deno.renameSync(`${path}.tmp`, path);
  }

  #drawBar(): void {
    if (!this.#bar) return;
    const done = this.#results.length, counts = this.#o.counts, width = 30;
    const filled = Math.round((done / Math.max(counts.length, 1)) * width);
    const bar = "#".repeat(filled) + ".".repeat(width - filled);
    const next = done < counts.length ? `, measuring ${sizeName(counts[done])} floats` : "";
    const line = `\r\x1b[2K[${bar}] ${done}/${counts.length} sizes${next}`;
    Deno.stderr.writeSync(new TextEncoder().encode(line));
  }

  #clearBar(): void {
    if (this.#bar) Deno.stderr.writeSync(new TextEncoder().encode("\r\x1b[2K"));
  }
}
