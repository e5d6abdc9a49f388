/**
 * Rank 0's output of a sweep: the aligned table on stdout, the CSV (complete rows only, appended
 * as each size finishes), the JSON sidecar (rewritten atomically after each size) and a progress
 * bar on stderr when it is a terminal.
 * @module
 */

import { stringify } from "csv-stringify/sync";
import type { SizeResult } from "./harness.ts";
import { CSV_COLUMNS, EXTRA_COLUMNS, FIELD_OF_COLUMN, type ResultRow } from "./metrics.ts";
import type { GpuInfo } from "../primitives/memory/gpu_device.ts";
import type { LinkCosts } from "../primitives/cost_model.ts";

/** Where a run came from; stored in the JSON sidecar. */
export interface RunMetadata {
  tool: string;
  deno: string;
  v8: string;
  os: string;
  cpu: string;
  cpus: number;
  memoryBytes: number;
  gpuAdapter: string | null;
  /**
   * The ranks' device, when they have one: adapter, backend, limits and Deno's completion floor
   * (ms to await an idle queue), measured at the start of the run.
   */
  gpu?: GpuInfo & { completionFloorMs: number };
  /** The links between hosts, as the group measured them (`Communicator.links`). */
  links?: LinkCosts;
  date: string;
  command: string[];
  options: Record<string, unknown>;
}

/** Options of {@linkcode Reporter}. */
export interface ReportOptions {
  /** Lines printed (each after `# `) above the table: what ran, the method and the units. */
  header: string[];
  /** Print the table to stdout. */
  table: boolean;
  /** Also print the p50/p99 columns (per-iteration timing, as OMB users expect). */
  percentiles?: boolean;
  csv?: string;
  json?: string;
  /** Element counts in the order they are measured, for the progress bar. */
  counts: number[];
  metadata: RunMetadata;
}

interface Column {
  title: string;
  width: number;
  cell: (r: ResultRow) => string;
  /** Shown only with {@linkcode ReportOptions.percentiles}. */
  percentile?: boolean;
}

/** An in-place cell: `-` where the in-place form was not timed. */
const inPlaceCell = (v: number | undefined, digits: number) =>
  v === undefined ? "-" : v.toFixed(digits);

const COLUMNS: Column[] = [
  { title: "count", width: 11, cell: (r) => String(r.floats) },
  { title: "bytes", width: 12, cell: (r) => String(r.bytes) },
  { title: "iters", width: 6, cell: (r) => String(r.iters) },
  { title: "time_us", width: 12, cell: (r) => r.time_us.toFixed(2) },
  { title: "min_us", width: 12, cell: (r) => r.min_us.toFixed(2) },
  { title: "max_us", width: 12, cell: (r) => r.max_us.toFixed(2) },
  { title: "p50_us", width: 12, cell: (r) => r.p50_us.toFixed(2), percentile: true },
  { title: "p99_us", width: 12, cell: (r) => r.p99_us.toFixed(2), percentile: true },
  { title: "Gb/s", width: 9, cell: (r) => r.gbps.toFixed(2) },
  { title: "algbw_GB/s", width: 11, cell: (r) => r.algbw_gbs.toFixed(3) },
  { title: "busbw_GB/s", width: 11, cell: (r) => r.busbw_gbs.toFixed(3) },
  { title: "wrong", width: 6, cell: (r) => String(r.wrong) },
  // nccl-tests' second set: the in-place form's time, algbw, busbw and wrong elements.
  { title: "ip_time_us", width: 12, cell: (r) => inPlaceCell(r.inplace_time_us, 2) },
  { title: "ip_algbw", width: 9, cell: (r) => inPlaceCell(r.inplace_algbw_gbs, 3) },
  { title: "ip_busbw", width: 9, cell: (r) => inPlaceCell(r.inplace_busbw_gbs, 3) },
  { title: "ip_wrong", width: 8, cell: (r) => inPlaceCell(r.inplace_wrong, 0) },
  { title: "algorithm", width: 0, cell: (r) => "  " + r.picked },
];

/** The row as CSV values: docs/design.md's columns, then the extras (empty where absent). */
export function csvValues(row: ResultRow): (string | number)[] {
  return [...CSV_COLUMNS, ...EXTRA_COLUMNS].map((c) => {
    const v = row[FIELD_OF_COLUMN[c] ?? (c as keyof ResultRow)];
    return v === undefined
      ? ""
      : typeof v === "number" && !Number.isInteger(v)
      ? Number(v.toPrecision(6))
      : v;
  });
}

/** A count as the CLI accepts it: 512, 4K, 16M; other counts as they are. */
export function sizeName(count: number): string {
  for (const [unit, suffix] of [[2 ** 30, "G"], [2 ** 20, "M"], [2 ** 10, "K"]] as const) {
    if (count >= unit && count % unit === 0) return `${count / unit}${suffix}`;
  }
  return String(count);
}

/** Writes one sweep's results as they arrive. */
export class Reporter {
  #o: ReportOptions;
  #columns: Column[];
  #results: SizeResult[] = [];
  #bar: boolean;

  constructor(options: ReportOptions) {
    this.#o = options;
    this.#columns = COLUMNS.filter((c) => !c.percentile || options.percentiles);
    this.#bar = Deno.stderr.isTerminal();
  }

  /** Prints the header and creates the files (the CSV with its header row). */
  start(): void {
    if (this.#o.table) {
      console.log(this.#o.header.map((l) => `# ${l}`).join("\n"));
      console.log("#" + this.#columns.map((c) => c.title.padStart(c.width)).join(" ").slice(1));
    }
    if (this.#o.csv) {
      Deno.writeTextFileSync(this.#o.csv, stringify([[...CSV_COLUMNS, ...EXTRA_COLUMNS]]));
    }
    this.#writeJson();
    this.#drawBar();
  }

  /** Adds one size's result everywhere. */
  add(result: SizeResult): void {
    this.#results.push(result);
    this.#clearBar();
    if (this.#o.table) {
      console.log(this.#columns.map((c) => c.cell(result.row).padStart(c.width)).join(" "));
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
    const doc = {
      metadata: this.#o.metadata,
      columns: [...CSV_COLUMNS, ...EXTRA_COLUMNS],
      units: { time: "µs", gbps: "1e9 bits/s", algbw_gbs: "1e9 bytes/s", busbw_gbs: "1e9 bytes/s" },
      rows: this.#results.map(({ row, samplesUs }) => ({
        ...row,
        samples_us: samplesUs.map((s) => Number(s.toPrecision(6))),
      })),
    };
    // Write then rename, so the sidecar is always a complete document.
    Deno.writeTextFileSync(`${path}.tmp`, JSON.stringify(doc, null, 1));
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
