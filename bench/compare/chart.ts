/**
 * Bandwidth-vs-size chart (Vega-Lite, rendered to SVG without a browser) and the self-contained
 * HTML report that holds it with the crossover table.
 * @module
 */

import * as vega from "vega";
import * as vegaLite from "vega-lite";
import type { Crossover, Curve } from "./crossover.ts";

/** The Vega-Lite spec: Gb/s against floats on log2 axes, a panel per primitive × ranks. */
export function chartSpec(curves: Curve[]): vegaLite.TopLevelSpec {
  const values = curves.flatMap((c) =>
    [...c.points.values()]
      .filter((p) => p.gbps > 0 && p.floats > 0)
      .map((p) => ({
        panel: `${c.primitive}, ${c.procs} ranks`,
        curve: c.label,
        floats: p.floats,
        gbps: p.gbps,
        time_us: p.time_us,
      }))
  );
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    data: { values },
    facet: { field: "panel", type: "nominal", title: null },
    columns: 2,
    spec: {
      width: 420,
      height: 260,
      mark: { type: "line", point: true },
      encoding: {
        x: {
          field: "floats",
          type: "quantitative",
          scale: { type: "log", base: 2 },
          axis: { title: "buffer size (floats)", format: "~s" },
        },
        y: {
          field: "gbps",
          type: "quantitative",
          scale: { type: "log" },
          axis: { title: "Gb/s (payload bits / time)" },
        },
        color: { field: "curve", type: "nominal", title: null },
        tooltip: [
          { field: "curve" },
          { field: "floats" },
          { field: "time_us", format: ".2f" },
          { field: "gbps", format: ".3f" },
        ],
      },
    },
    resolve: { scale: { y: "independent" } },
  };
}

/** Renders the chart to an SVG document. */
export async function renderSvg(curves: Curve[]): Promise<string> {
  const compiled = vegaLite.compile(chartSpec(curves)).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: "none" });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

const escape = (s: string) =>
  s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!);

/** A self-contained HTML page: title, inputs, the SVG inline, and the crossover table. */
export function renderHtml(svg: string, rows: Crossover[], inputs: string[]): string {
  const table = rows.map((r) =>
    `<tr><td>${
      escape(r.primitive)
    }</td><td>${r.procs}</td><td>${r.fromFloats}</td><td>${r.toFloats}</td>` +
    `<td>${escape(r.fastest)}</td><td>${
      Number.isNaN(r.margin) ? "-" : r.margin.toFixed(2) + "×"
    }</td></tr>`
  ).join("\n");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>dccl compare</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:.2em .6em;text-align:right}</style></head>
<body><h1>dccl compare</h1>
<p>Inputs: ${inputs.map(escape).join(", ")}</p>
${svg}
<h2>Fastest per size range</h2>
<p>margin: median of runner-up time / fastest time over the range.</p>
<table><tr><th>primitive</th><th>procs</th><th>from floats</th><th>to floats</th><th>fastest</th><th>margin</th></tr>
${table}
</table></body></html>
`;
}
