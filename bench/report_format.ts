/**
 * What a sweep's output looks like wherever it goes: the aligned table the CLI prints, the CSV
 * row (docs/design.md's columns) and the JSON sidecar document. Deno writes them to stdout and
 * files (deno/files/sweep_writer.ts); a browser tab draws them on its page.
 * @module
 */

import type { SizeResult } from "./harness.ts";
import {
  CSV_COLUMNS,
  EXTRA_COLUMNS,
  FIELD_OF_COLUMN,
  P999_MIN_SAMPLES,
  type ResultRow,
} from "./metrics.ts";
import type { GpuInfo, LinkCosts, LinkKind, RankKind, SimModel } from "../internal.ts";
import { limitLines, type RunBounds } from "./limits/machine_limits.ts";
import { bytesName } from "./sizes.ts";

/** Which f16 kernels a rank ran. */
export type HalfKernels = "hardware" | "software";

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
  /** A mixed group's ranks: Deno processes and browser tabs (`--tabs`). */
  members?: readonly RankKind[];
  /** A mixed group's pairs of ranks, counted by how they are linked. */
  linkKinds?: Partial<Record<LinkKind, number>>;
  /**
   * Whether the run summed reproducibly (`--reproducible`): every row's `wrong` then counts the
   * elements whose bits differ from the reproducible sum of the inputs.
   */
  reproducible?: boolean;
  /** The network a simulated run modelled (`--transport sim`): its times are virtual. */
  model?: SimModel;
  /** The machine's limits the rows were read against; null when none were measured. */
  limits?: RunBounds | null;
  /**
   * Which f16 kernels the ranks ran, as each reported its own: `hardware` (the engine's f16x8
   * conversions) or `software` (docs/dtypes.md); by rank where they differ (ranks in processes
   * or on hosts of other engines).
   */
  halfKernels?: HalfKernels | HalfKernels[];
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
  /** Also print the best case and the percentiles (per-iteration timing, as OMB users expect). */
  percentiles?: boolean;
  /** Also print an overlap test's columns: overall, compute and overlap. */
  overlap?: boolean;
  /** Also print alltoallv's traffic columns: busiest rank, imbalance, the balanced run. */
  traffic?: boolean;
  /** Print OSU's layout instead of nccl-tests' (`--format osu`; `full`: OSU's `-f`). */
  osu?: OsuOptions;
  /** The CSV file to write, if any. */
  csv?: string;
  /** The JSON sidecar to write, if any. */
  json?: string;
  /** Element counts in the order they are measured, for the progress bar. */
  counts: number[];
  /** Where the run came from. */
  metadata: RunMetadata;
  /**
   * The machine's limits that bound the run: the footer reads the rows against them (null: none
   * measured, and the footer says how to measure them; undefined: no word of them).
   */
  bounds?: RunBounds | null;
}

interface Column {
  /** Its group's name, its title and its unit: the header's three lines. */
  group?: string;
  title: string;
  unit?: string;
  width: number;
  cell: (r: ResultRow) => string;
  /** Shown only with {@linkcode ReportOptions.percentiles}. */
  percentile?: boolean;
  /** Shown only with {@linkcode ReportOptions.overlap}. */
  overlap?: boolean;
  /** Shown only with {@linkcode ReportOptions.traffic}. */
  traffic?: boolean;
}

/** A time as nccl-tests prints it: fewer decimals as it grows, so it keeps to 8 characters. */
export function timeCell(us: number): string {
  return us.toFixed(us >= 10_000 ? 0 : us >= 100 ? 1 : 2);
}

/** An in-place cell: `-` where the in-place form was not timed. */
const inPlace = (v: number | undefined, show: (v: number) => string) =>
  v === undefined ? "-" : show(v);

/** The columns of one form, out-of-place or in-place, in nccl-tests' order. */
function form(
  group: string,
  get: (r: ResultRow) => {
    time?: number;
    algbw?: number;
    busbw?: number;
    wrong?: number;
  },
): Column[] {
  return [
    { group, title: "time", unit: "(us)", width: 8, cell: (r) => inPlace(get(r).time, timeCell) },
    {
      title: "algbw",
      unit: "(GB/s)",
      width: 6,
      cell: (r) => inPlace(get(r).algbw, (v) => v.toFixed(2)),
    },
    {
      title: "busbw",
      unit: "(GB/s)",
      width: 6,
      cell: (r) => inPlace(get(r).busbw, (v) => v.toFixed(2)),
    },
    // NaN: not checked (a simulated run's phantom payloads are sized only).
    {
      title: "#wrong",
      width: 6,
      cell: (r) => inPlace(get(r).wrong, (v) => Number.isNaN(v) ? "n/a" : String(v)),
    },
  ];
}

// nccl-tests' columns, in its order, then the best case and the percentiles (per-iteration
// timing) and the algorithm that ran: 117 characters wide, 162 with the percentiles. The CSV
// has every field.
const COLUMNS: Column[] = [
  { title: "size", unit: "(B)", width: 10, cell: (r) => String(r.bytes) },
  { title: "count", unit: "(elements)", width: 10, cell: (r) => String(r.floats) },
  { title: "type", width: 4, cell: (r) => r.dtype },
  { title: "redop", width: 5, cell: (r) => r.op },
  { title: "root", width: 4, cell: (r) => String(r.root) },
  ...form("out-of-place", (r) => ({
    time: r.time_us,
    algbw: r.algbw_gbs,
    busbw: r.busbw_gbs,
    wrong: r.wrong,
  })),
  ...form("in-place", (r) => ({
    time: r.inplace_time_us,
    algbw: r.inplace_algbw_gbs,
    busbw: r.inplace_busbw_gbs,
    wrong: r.inplace_wrong,
  })),
  ...([["best", "best_us"], ["p50", "p50_us"], ["p90", "p90_us"], ["p99", "p99_us"], [
    "p99.9",
    "p999_us",
  ]] as const).map(([title, field]): Column => ({
    title,
    unit: "(us)",
    width: 8,
    cell: (r) => inPlace(r[field], timeCell),
    percentile: true,
  })),
  ...([["overall", "(us)", "overall_us"], ["compute", "(us)", "compute_us"], [
    "overlap",
    "(%)",
    "overlap_pct",
  ]] as const).map(([title, unit, field]): Column => ({
    title,
    unit,
    width: 8,
    cell: (r) => inPlace(r[field], field === "overlap_pct" ? (v) => v.toFixed(1) : timeCell),
    overlap: true,
  })),
  {
    title: "busiest",
    unit: "(B)",
    width: 10,
    cell: (r) => inPlace(r.busiest_bytes, String),
    traffic: true,
  },
  {
    title: "imbal",
    width: 5,
    cell: (r) => inPlace(r.imbalance, (v) => v.toFixed(2)),
    traffic: true,
  },
  {
    title: "balanced",
    unit: "(us)",
    width: 8,
    cell: (r) => inPlace(r.balanced_us, timeCell),
    traffic: true,
  },
  {
    title: "slowdn",
    width: 6,
    cell: (r) => inPlace(r.slowdown, (v) => v.toFixed(2)),
    traffic: true,
  },
  { title: " algorithm", width: 0, cell: (r) => " " + r.picked },
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

/** How a table prints: its header, each row, and what follows the last row. */
export interface TableLayout {
  /** The header's lines (joined). */
  title: string;
  /** One row. */
  line(row: ResultRow): string;
  /** The lines under the last row ("" for none). */
  footer(rows: readonly ResultRow[]): string;
}

/** The layout `options` ask for: OSU's, or nccl-tests' (the default). */
export function layoutOf(
  options: Pick<ReportOptions, "osu" | "percentiles" | "overlap" | "traffic" | "bounds">,
): TableLayout {
  return options.osu
    ? osuLayout(options.osu)
    : tableLayout(options.percentiles, options.bounds, options);
}

/**
 * The table as nccl-tests prints it: three header lines (the forms, the titles, the units), one
 * line per row, and the footer under the last row: the wrong elements of every form of every
 * size (`# Out of bounds values : 0 OK`) and the mean busbw over them (`# Avg bus bandwidth`),
 * then the rows read against the machine's limits (`bounds`; bench/limits). `percentiles`: the
 * best case and percentile columns too; `extra`: an overlap test's or alltoallv's columns.
 */
export function tableLayout(
  percentiles?: boolean,
  bounds?: RunBounds | null,
  extra?: Pick<ReportOptions, "overlap" | "traffic">,
): TableLayout {
  percentiles ??= false;
  extra ??= {};
  const columns = COLUMNS.filter((c) =>
    (!c.percentile || percentiles) && (!c.overlap || extra.overlap) && (!c.traffic || extra.traffic)
  );
  const headerLine = (text: (c: Column) => string) =>
    "#" + columns.map((c) => text(c).padStart(c.width)).join(" ").slice(1).trimEnd();
  // Each group's name is centred over its columns, as nccl-tests prints it.
  let groups = "", at = 0;
  columns.forEach((c, i) => {
    if (c.group) {
      const span = columns.slice(i, i + 4).reduce((w, d) => w + d.width + 1, 0) - 1;
      groups = groups.padEnd(at) + c.group.padStart(Math.floor((span + c.group.length) / 2))
        .padEnd(span);
    }
    at += c.width + 1;
  });
  return {
    title: ["#" + groups.slice(1), headerLine((c) => c.title), headerLine((c) => c.unit ?? "")]
      .map((l) => l.trimEnd()).join("\n"),
    line: (row) => columns.map((c) => c.cell(row).padStart(c.width)).join(" "),
    footer(rows) {
      const checked = rows.some((r) => !Number.isNaN(r.wrong));
      const wrong = rows.reduce((n, r) => n + (r.wrong || 0) + (r.inplace_wrong || 0), 0);
      const busbw = rows.flatMap((r) =>
        r.inplace_busbw_gbs === undefined ? [r.busbw_gbs] : [r.busbw_gbs, r.inplace_busbw_gbs]
      );
      const mean = busbw.length ? busbw.reduce((a, b) => a + b, 0) / busbw.length : 0;
      const limits = bounds === undefined ? [] : limitLines(rows, bounds ?? undefined);
      return [
        checked
          ? `# Out of bounds values : ${wrong} ${wrong === 0 ? "OK" : "FAILED"}`
          : "# Out of bounds values : not checked (phantom payloads: sized only)",
        `# Avg bus bandwidth    : ${mean.toFixed(mean < 1 ? 4 : 3)}`,
        ...limits,
        ...spreadLines(rows),
        ...(percentiles ? fewSamplesLines(rows) : []),
      ].join("\n");
    },
  };
}

/** Mean time / median sample of a size above which its row is carried by a few slow samples. */
export const SPREAD_WARNING = 1.25;

/**
 * A warning when some sizes' mean times (the rows' time) are over {@linkcode SPREAD_WARNING}×
 * their median sample: a few slow samples (the machine's other work) decided those rows.
 */
export function spreadLines(rows: readonly ResultRow[]): string[] {
  const ratio = (r: ResultRow) => r.time_us / r.p50_us;
  const spread = rows.filter((r) => ratio(r) > SPREAD_WARNING);
  if (spread.length === 0) return [];
  const worst = spread.reduce((a, b) => ratio(b) > ratio(a) ? b : a);
  return [
    `# Spread: at ${spread.length} of ${rows.length} sizes the time is over ${SPREAD_WARNING}x ` +
    `the median sample (${ratio(worst).toFixed(1)}x at ${bytesName(worst.bytes)}): a few slow ` +
    "samples decided them; the machine was busy: run again, or with fewer ranks than cores",
  ];
}

/** Where a per-iteration run's p99.9 is blank: the sizes with too few samples for one. */
function fewSamplesLines(rows: readonly ResultRow[]): string[] {
  const few = rows.filter((r) => r.p999_us === undefined).length;
  return few === 0 ? [] : [
    `# p99.9: ${few} of ${rows.length} sizes had under ${P999_MIN_SAMPLES} samples, too few ` +
    `for one (-): give --iters ${P999_MIN_SAMPLES} or more`,
  ];
}

/** OSU's names of the collective tests, by primitive: `# OSU MPI <name> Latency Test`. */
const OSU_NAMES: Record<string, string> = {
  allreduce: "Allreduce",
  bcast: "Broadcast",
  reduce: "Reduce",
  allgather: "Allgather",
  reduce_scatter: "Reduce_scatter",
  alltoall: "All-to-All",
  gather: "Gather",
  scatter: "Scatter",
  sendrecv: "Sendrecv", // no OSU test: nccl-tests' exchange, in OSU's layout
};

/** OSU's point-to-point tests by primitive: the title, and bandwidth or latency rows. */
const OSU_POINT_TO_POINT: Record<string, { title: (pairs: number) => string; bw: boolean }> = {
  latency: { title: (pairs) => pairs > 1 ? "Multi Latency Test" : "Latency Test", bw: false },
  bw: { title: () => "Bandwidth Test", bw: true },
  bibw: { title: () => "Bi-Directional Bandwidth Test", bw: true },
  mbw_mr: { title: () => "Multiple Bandwidth / Message Rate Test", bw: true },
};

/** OSU's non-blocking tests by primitive: `# OSU MPI Non-blocking <name> Latency Test`. */
const OSU_NON_BLOCKING: Record<string, string> = {
  iallreduce: "Allreduce",
  ibcast: "Broadcast",
  ialltoall: "All-to-All",
};

/** What OSU's layout of a run shows. */
export interface OsuOptions {
  /** The primitive, as the CLI spells it. */
  primitive: string;
  /** The element type, for OSU's `# Datatype:` line. */
  dtype: string;
  /** OSU's `-f`: the fastest and slowest rank's latency and the iterations. */
  full?: boolean;
  /** Pairs of a point-to-point test. @default {1} */
  pairs?: number;
  /** Messages per window of a streaming test. */
  window?: number;
}

/** MPI's names of the element types, for OSU's `# Datatype:` line. */
const MPI_TYPES: Record<string, string> = {
  f32: "MPI_FLOAT",
  f64: "MPI_DOUBLE",
  i32: "MPI_INT",
  f16: "MPI_FLOAT16 (IEEE binary16)",
  bf16: "bfloat16",
};

/**
 * The table as the OSU micro-benchmarks print it (`--format osu`), so their plotting scripts read
 * it: the test's title, its datatype, `# Size  Avg Latency(us)` and a row per size in bytes;
 * `full` (OSU's `-f`) adds the fastest and slowest rank's latency and the iterations.
 */
export function osuLayout(options: OsuOptions): TableLayout {
  const { primitive } = options;
  const cells = (size: string, values: string[], iterations?: string) =>
    size.padEnd(10) + values.map((v) => v.padStart(18)).join("") +
    (iterations === undefined ? "" : iterations.padStart(12));
  const pointToPoint = OSU_POINT_TO_POINT[primitive];
  if (pointToPoint?.bw) return osuBandwidthLayout(options, pointToPoint.title(1), cells);
  if (OSU_NON_BLOCKING[primitive]) return osuOverlapLayout(options, cells);
  const name = pointToPoint ? "" : OSU_NAMES[primitive] ?? primitive;
  const test = pointToPoint ? pointToPoint.title(options.pairs ?? 1) : "Latency Test";
  const titles = [
    "Avg Latency(us)",
    ...(options.full ? ["Min Latency(us)", "Max Latency(us)"] : []),
  ];
  return {
    title: [
      `# OSU MPI ${name ? `${name} ` : ""}${test} (dccl)`,
      `# Datatype: ${MPI_TYPES[options.dtype] ?? options.dtype}.`,
      cells("# Size", titles, options.full ? "Iterations" : undefined),
    ].join("\n"),
    line: (r) =>
      cells(
        String(r.bytes),
        [r.time_us, ...(options.full ? [r.min_us, r.max_us] : [])].map((v) => v.toFixed(2)),
        options.full ? String(r.iters) : undefined,
      ),
    footer: () => "",
  };
}

/**
 * OSU's bandwidth tests (osu_bw, osu_bibw, osu_mbw_mr): `# Size  Bandwidth (MB/s)` rows (MB =
 * 1e6 B, every stream together), and osu_mbw_mr's pairs, window and messages per second.
 */
function osuBandwidthLayout(
  options: OsuOptions,
  test: string,
  cells: (size: string, values: string[]) => string,
): TableLayout {
  const rate = options.primitive === "mbw_mr";
  return {
    title: [
      `# OSU MPI ${test} (dccl)`,
      ...(rate ? [`# [ pairs: ${options.pairs ?? 1} ] [ window size: ${options.window} ]`] : []),
      `# Datatype: ${MPI_TYPES[options.dtype] ?? options.dtype}.`,
      cells("# Size", rate ? ["MB/s", "Messages/s"] : ["Bandwidth (MB/s)"]),
    ].join("\n"),
    line: (r) =>
      cells(String(r.bytes), [
        (r.algbw_gbs * 1e3).toFixed(2),
        ...(rate ? [(r.msg_rate ?? 0).toFixed(2)] : []),
      ]),
    footer: () => "",
  };
}

/**
 * OSU's non-blocking tests (osu_iallreduce …): overall, compute and pure communication µs and the
 * overlap percent, a row per size in bytes.
 */
function osuOverlapLayout(
  options: OsuOptions,
  cells: (size: string, values: string[]) => string,
): TableLayout {
  return {
    title: [
      `# OSU MPI Non-blocking ${OSU_NON_BLOCKING[options.primitive]} Latency Test (dccl)`,
      `# Datatype: ${MPI_TYPES[options.dtype] ?? options.dtype}.`,
      cells("# Size", ["Overall(us)", "Compute(us)", "Pure Comm.(us)", "Overlap(%)"]),
    ].join("\n"),
    line: (r) =>
      cells(
        String(r.bytes),
        [r.overall_us ?? NaN, r.compute_us ?? NaN, r.time_us, r.overlap_pct ?? NaN].map((v) =>
          v.toFixed(2)
        ),
      ),
    footer: () => "",
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
  options?: { complete?: boolean },
): object {
  return {
    complete: options?.complete ?? false,
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
