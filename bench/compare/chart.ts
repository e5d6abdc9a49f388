/**
 * Bandwidth-vs-size chart (Vega-Lite, rendered to SVG without a browser) and the self-contained
 * HTML report that holds it with the crossover table.
 * @module
 */

import * as vega from "vega";
import * as vegaLite from "vega-lite";
import type { Crossover, Curve, WrongResults } from "./crossover.ts";
import type { Point } from "./results.ts";

/**
 * The two figures drawn for every point, in the CLI table's units: bandwidth (algbw, GB/s; or,
 * asked, the share of the machine's limit reached), and time per operation (small sizes).
 */
const METRICS = [
  ["algbw", "algbw (GB/s: bytes / time, 1 GB = 1e9 B)"],
  ["time_us", "time per op (µs)"],
] as const;
const SHARE = ["pct_limit", "% of the machine's limit (deno task limits)"] as const;

/**
 * Curve colours: ten distinct hues first (Tableau's), then their pale forms; with the markers
 * below, two curves differ in hue and in shape, so a grey print still tells them apart.
 */
const HUES = [
  "#4c78a8",
  "#f58518",
  "#54a24b",
  "#b279a2",
  "#9d755d",
  "#e45756",
  "#72b7b2",
  "#eeca3b",
  "#ff9da6",
  "#79706e",
  "#9ecae9",
  "#ffbf79",
  "#88d27a",
  "#d6a5c9",
  "#d8b5a5",
  "#ff9d98",
  "#bab0ac",
  "#f2cf5b",
  "#fcbfd2",
  "#83bcb6",
];
// No cross: a red cross marks a size with wrong results.
const MARKERS = ["circle", "square", "triangle-up", "diamond", "triangle-down", "triangle-right"];

/** Options of {@linkcode chartSpec}. */
export interface ChartOptions {
  /** Draw each point's share of the machine's limit instead of its algbw. @default {false} */
  ofLimit?: boolean;
}

/**
 * The Vega-Lite spec: a row per primitive × ranks, GB/s and µs per op against bytes on log axes
 * side by side, each curve with its own colour, dash and marker; sizes whose results had wrong
 * elements are red crosses off the lines.
 */
export function chartSpec(curves: Curve[], options: ChartOptions = {}): vegaLite.TopLevelSpec {
  const { drawn, perCurve, left } = chartedCurves(curves);
  const metrics = options.ofLimit ? [SHARE, METRICS[1]] : METRICS;
  const values = drawn.flatMap((c) =>
    chartPoints(c, perCurve)
      .flatMap((p) =>
        metrics.map(([field, metric]) => [metric, valueOf(p, field)] as const)
          .filter(([, value]) => value !== undefined).map(([metric, value]) => ({
            panel: `${c.primitive}, ${c.procs} ranks`,
            metric,
            value,
            curve: c.label,
            bytes: p.floats * 4,
            algbw: p.gbps / 8,
            time_us: p.time_us,
            wrong: p.wrong,
          }))
      )
  );
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: left
      ? { text: "Bandwidth and time per operation against buffer size", subtitle: left }
      : "Bandwidth and time per operation against buffer size",
    data: { values },
    facet: {
      row: { field: "panel", type: "nominal", title: null },
      // Bandwidth before µs: the titles sort that way.
      column: { field: "metric", type: "nominal", title: null },
    },
    spec: {
      width: 340,
      height: 260,
      encoding: {
        x: {
          field: "bytes",
          type: "quantitative",
          scale: { type: "log", base: 2 },
          axis: {
            title: "buffer size (bytes, as the table's size; K = 2^10 B, M = 2^20 B)",
            values: sizeTicks(values.map((v) => v.bytes)),
            labelExpr: BINARY_SIZE,
          },
        },
        y: { field: "value", type: "quantitative", scale: { type: "log" }, axis: { title: null } },
        tooltip: [
          { field: "curve" },
          { field: "bytes" },
          { field: "time_us", format: ".2f" },
          { field: "algbw", title: "algbw (GB/s)", format: ".3f" },
          { field: "wrong" },
        ],
      },
      layer: [
        {
          transform: [{ filter: "datum.wrong == 0" }],
          mark: { type: "line", point: { filled: true, size: 45 } },
          encoding: {
            // Twenty colours before one repeats; dashes and markers repeat at other lengths, so
            // no two curves of a chart look alike.
            color: { field: "curve", type: "nominal", title: null, scale: { range: HUES } },
            strokeDash: { field: "curve", type: "nominal", title: null },
            shape: { field: "curve", type: "nominal", title: null, scale: { range: MARKERS } },
          },
        },
        {
          transform: [{ filter: "datum.wrong > 0" }],
          mark: { type: "point", shape: "cross", color: "#d62728", size: 140, strokeWidth: 2 },
        },
        // The limit itself across a share-of-limit panel: a point above it beat a bound.
        ...(options.ofLimit
          ? [{
            transform: [{ filter: `datum.metric == ${JSON.stringify(SHARE[1])}` }],
            mark: { type: "rule" as const, color: "#444444", strokeDash: [6, 3] },
            encoding: {
              x: { aggregate: "min" as const, field: "bytes", type: "quantitative" as const },
              x2: { aggregate: "max" as const, field: "bytes" },
              y: { datum: 100 },
              tooltip: null,
            },
          }]
          : []),
      ],
    },
    resolve: { scale: { y: "independent" } },
    // Legend labels whole: they are what tells the curves apart.
    config: { legend: { labelLimit: 0 } },
  };
}

/** A point's figure of `field`: algbw (GB/s) from its Gb/s; the others as they are. */
function valueOf(p: Point, field: "algbw" | "time_us" | "pct_limit"): number | undefined {
  return field === "algbw" ? p.gbps / 8 : p[field];
}

/** Most points of one curve a chart draws (of each kind: right, and wrong results). */
export const CHART_POINTS_PER_CURVE = 1000;

/**
 * Most points a whole chart draws, the panels (primitive × ranks) it draws and the curves in
 * each: the chart's size stays a few MB whatever the input (the tables keep everything).
 */
export const CHART_LIMITS = { points: 6000, panels: 12, curvesPerPanel: 20 } as const;

/**
 * The curves the chart draws (the first {@linkcode CHART_LIMITS} panels, and curves of each),
 * how many points each may draw, and a line saying what was left out, if anything was.
 */
export function chartedCurves(
  curves: Curve[],
): { drawn: Curve[]; perCurve: number; left?: string } {
  const panels = new Map<string, Curve[]>();
  for (const c of curves) {
    const panel = `${c.primitive}, ${c.procs} ranks`;
    if (!panels.has(panel) && panels.size === CHART_LIMITS.panels) continue;
    const list = panels.get(panel) ?? [];
    if (list.length < CHART_LIMITS.curvesPerPanel) list.push(c);
    panels.set(panel, list);
  }
  const drawn = [...panels.values()].flat();
  const perCurve = Math.min(
    CHART_POINTS_PER_CURVE,
    Math.max(16, Math.floor(CHART_LIMITS.points / Math.max(1, drawn.length))),
  );
  const total = new Set(curves.map((c) => `${c.primitive}, ${c.procs} ranks`)).size;
  const left = drawn.length < curves.length
    ? `drawn: ${drawn.length} of ${curves.length} curves (${panels.size} of ${total} panels, at ` +
      `most ${CHART_LIMITS.curvesPerPanel} curves each); the table covers all`
    : undefined;
  return { drawn, perCurve, left };
}

/**
 * The points of `c` the chart draws: all of them up to `most` of a kind; past that, one per bin
 * of equal width on the log size axis (the bin's median time), so a curve of a million sizes
 * draws as the same line in a chart of bounded size.
 */
export function chartPoints(c: Curve, most = CHART_POINTS_PER_CURVE): Point[] {
  const drawable = [...c.points.values()].filter((p) => p.gbps > 0 && p.floats > 0);
  const right = drawable.filter((p) => p.wrong === 0), wrong = drawable.filter((p) => p.wrong > 0);
  return [...thinned(right, most), ...thinned(wrong, most)];
}

function thinned(points: Point[], most: number): Point[] {
  if (points.length <= most) return points;
  points.sort((a, b) => a.floats - b.floats);
  const lo = Math.log2(points[0].floats), span = Math.log2(points.at(-1)!.floats) - lo || 1;
  const bins: Point[][] = Array.from({ length: most }, () => []);
  for (const p of points) {
    const bin = Math.floor((Math.log2(p.floats) - lo) / span * (most - 1));
    bins[bin].push(p);
  }
  return bins.filter((b) => b.length > 0).map((b) =>
    b.sort((x, y) => x.time_us - y.time_us)[Math.floor((b.length - 1) / 2)]
  );
}

/** Powers of two across the sizes, every one or every few, for at most ~10 ticks. */
function sizeTicks(sizes: number[]): number[] {
  if (sizes.length === 0) return [];
  // A loop, not a spread: a spread of a million sizes overflows the stack.
  let min = Infinity, max = -Infinity;
  for (const f of sizes) [min, max] = [Math.min(min, f), Math.max(max, f)];
  const lo = Math.floor(Math.log2(min)), hi = Math.ceil(Math.log2(max));
  const step = Math.max(1, Math.ceil((hi - lo) / 10));
  return Array.from({ length: Math.floor((hi - lo) / step) + 1 }, (_, k) => 2 ** (lo + k * step));
}

/** A Vega expression writing a power of two of bytes as the CLI's sizes: 4B, 512B, 4KB, 16MB, 1GB. */
const BINARY_SIZE = [
  [2 ** 30, "GB"],
  [2 ** 20, "MB"],
  [2 ** 10, "KB"],
].reduceRight(
  (rest, [unit, suffix]) =>
    `datum.value >= ${unit} ? format(datum.value / ${unit}, "d") + "${suffix}" : ${rest}`,
  'format(datum.value, "d") + "B"',
);

/** Renders the chart to an SVG document. */
export function renderSvg(curves: Curve[], options?: ChartOptions): Promise<string> {
  return specToSvg(chartSpec(curves, options));
}

/** Renders any Vega-Lite spec to an SVG document, without a browser. */
export async function specToSvg(spec: vegaLite.TopLevelSpec): Promise<string> {
  const compiled = vegaLite.compile(spec).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: "none" });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

const escape = (s: string) =>
  s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!);

/** An HTML table of a header row and rows of cells. */
export function htmlTable(header: string[], rows: (string | number)[][]): string {
  const cells = (tag: string, values: (string | number)[]) =>
    `<tr>${values.map((v) => `<${tag}>${escape(String(v))}</${tag}>`).join("")}</tr>`;
  return `<table>\n${
    [cells("th", header), ...rows.map((r) => cells("td", r))].join("\n")
  }\n</table>`;
}

/** A self-contained HTML page: `title`, then `body` (already HTML). */
export function htmlPage(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:.2em .6em;text-align:right}</style></head>
<body><h1>${escape(title)}</h1>
${body}
</body></html>
`;
}

/** A run that produced no curve (a sweep's combination that failed), and why. */
export interface FailedRun {
  /** What it was (a sweep's `allreduce-shm-managed-2`). */
  name: string;
  /** Its error's first line. */
  reason: string;
}

/**
 * A self-contained HTML page: title, inputs, the SVG inline, the crossover table, then the sizes
 * with wrong results and the runs that failed (a sweep's), where there are any.
 */
export function renderHtml(
  svg: string,
  rows: Crossover[],
  inputs: string[],
  tolerance: number,
  wrong: WrongResults[] = [],
  failed: FailedRun[] = [],
): string {
  const table = htmlTable(
    ["primitive", "procs", "from floats", "to floats", "fastest", "margin", "level with"],
    rows.map((r) => [
      r.primitive,
      r.procs,
      r.fromFloats,
      r.toFloats,
      r.fastest,
      Number.isNaN(r.margin) ? "-" : `${r.margin.toFixed(2)}×`,
      r.level.join(", ") || "-",
    ]),
  );
  return htmlPage(
    "dccl compare",
    `<p>Inputs: ${inputs.map(escape).join(", ")}</p>
${svg}
<h2>Fastest per size range</h2>
<p>A curve within ${Math.round(tolerance * 100)}% of the fastest at a size counts as fastest
there (level with it). margin: median over the range of the runner-up's time / this curve's
time.</p>
${table}${wrongTable(wrong)}${failedTable(failed)}`,
  );
}

/** The runs that failed, if any: named in the report, never left out in silence. */
function failedTable(failed: FailedRun[]): string {
  if (failed.length === 0) return "";
  return `
<h2>Failed (no curve)</h2>
${htmlTable(["run", "why"], failed.map((f) => [f.name, f.reason]))}`;
}

/** The sizes whose results had wrong elements (red crosses in the chart), if any. */
function wrongTable(wrong: WrongResults[]): string {
  if (wrong.length === 0) return "";
  const rows = wrong.flatMap((w) =>
    w.sizes.map(([floats, n]) => [w.primitive, w.procs, w.curve, floats, n])
  );
  return `
<h2>Wrong results (not compared)</h2>
${htmlTable(["primitive", "procs", "curve", "floats", "wrong elements"], rows)}`;
}
