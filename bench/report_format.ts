/**
 * What a sweep's output looks like wherever it goes: the aligned table the CLI prints, the CSV
 * row (docs/design.md's columns) and the JSON sidecar document. Deno writes them to stdout and
 * files (deno/bench/sweep_writer.ts); a browser tab draws them on its page.
 * @module
 */

import type { SizeResult } from "./harness.ts";
import { CSV_COLUMNS, EXTRA_COLUMNS, FIELD_OF_COLUMN, type ResultRow } from "./metrics.ts";
import type { GpuInfo } from "../primitives/memory/gpu_device.ts";
import type { LinkCosts } from "../primitives/types.ts";

/** Where a run came from; stored in the JSON sidecar. */
export interface RunMetadata {
  /** The tool and its version. */
  tool: string;
  /** Deno's version (or the browser's, in a tab). */
  deno: string;
  /** V8's version. */
  v8: string;
  /** Operating system and architecture. */
  os: string;
  /** The CPU's model. */
  cpu: string;
  /** Logical CPUs. */
  cpus: number;
  /** Physical memory, bytes. */
  memoryBytes: number;
  /** The WebGPU adapter, or null when there is none. */
  gpuAdapter: string | null;
  /**
   * The ranks' device, when they have one: adapter, backend, limits and Deno's completion floor
   * (ms to await an idle queue), measured at the start of the run.
   */
  gpu?: GpuInfo & { completionFloorMs: number };
  /** The links between hosts, as the group measured them (`Communicator.links`). */
  links?: LinkCosts;
  /**
   * A browser tab's facts (web/environment.ts): user agent, cores, isolation, timer resolution,
   * the WebGPU adapter and whether it is a fallback.
   */
  browser?: object;
  /** When the run began (ISO 8601). */
  date: string;
  /** The command line. */
  command: string[];
  /** Every option as the run resolved it. */
  options: Record<string, unknown>;
}

/** What a sweep's output shows besides its rows. */
export interface ReportOptions {
  /** Lines printed (each after `# `) above the table: what ran, the method and the units. */
  header: string[];
  /** Print the table to stdout. */
  table: boolean;
  /** Also print the p50/p99 columns (per-iteration timing, as OMB users expect). */
  percentiles?: boolean;
  /** The CSV file to write, if any. */
  csv?: string;
  /** The JSON sidecar to write, if any. */
  json?: string;
  /** Element counts in the order they are measured, for the progress bar. */
  counts: number[];
  /** Where the run came from. */
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
  return CSV_HEADER.map((c) => {
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

/** The table's title line and one line per row (`percentiles`: the p50/p99 columns too). */
export function tableLayout(percentiles = false): {
  title: string;
  line(row: ResultRow): string;
} {
  const columns = COLUMNS.filter((c) => !c.percentile || percentiles);
  return {
    title: "#" + columns.map((c) => c.title.padStart(c.width)).join(" ").slice(1),
    line: (row) => columns.map((c) => c.cell(row).padStart(c.width)).join(" "),
  };
}

/** The CSV's columns, in order. */
export const CSV_HEADER: readonly string[] = [...CSV_COLUMNS, ...EXTRA_COLUMNS];

/**
 * The JSON sidecar of a sweep: whether it measured every size it planned (`complete`, false
 * unless said), its metadata, columns, units and every row with its samples.
 */
export function sidecar(
  metadata: RunMetadata,
  results: readonly SizeResult[],
  { complete = false }: { complete?: boolean } = {},
): object {
  return {
    complete,
    metadata,
    columns: CSV_HEADER,
    units: { time: "µs", gbps: "1e9 bits/s", algbw_gbs: "1e9 bytes/s", busbw_gbs: "1e9 bytes/s" },
    rows: results.map(({ row, samplesUs }) => ({
      ...row,
      samples_us: samplesUs.map((s) => Number(s.toPrecision(6))),
    })),
  };
}

/** Where rank 0 puts a sweep's output as it is measured. */
export interface SweepSink {
  /** Before the first size. */
  start(): void;
  /** One size's result. */
  add(result: SizeResult): void;
  /** After the last size, or a failure. */
  finish(): void;
}
