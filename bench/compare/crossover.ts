/**
 * Curves and crossovers: groups points into one curve per file × primitive × ranks × transport ×
 * memory × algorithm, and finds, per primitive and rank count, which curve is fastest over which
 * size range (the founding study's "below N floats A is fastest, above it B").
 * @module
 */

import type { Point } from "./results.ts";

/** One line of the chart. */
export interface Curve {
  /** Shortest name that tells this curve apart from the others being compared. */
  label: string;
  primitive: string;
  procs: number;
  /** Points by size in floats. */
  points: Map<number, Point>;
}

/** One size range with one fastest curve. */
export interface Crossover {
  primitive: string;
  procs: number;
  fromFloats: number;
  toFloats: number;
  fastest: string;
  /** Median over the range of (runner-up time / fastest time); NaN when nothing else ran. */
  margin: number;
}

const LABEL_FIELDS = ["transport", "memory", "algorithm", "source"] as const;

/** Groups points into curves labelled by the fields that differ between curves. */
export function toCurves(points: Point[]): Curve[] {
  const key = (p: Point) => [p.primitive, p.procs, ...LABEL_FIELDS.map((f) => p[f])].join("\u0000");
  const groups = new Map<string, Point[]>();
  for (const p of points) groups.set(key(p), [...(groups.get(key(p)) ?? []), p]);
  const firsts = [...groups.values()].map((g) => g[0]);
  // The source (file) only matters when two files hold otherwise identical curves.
  const varying = LABEL_FIELDS.filter((f) =>
    f === "source"
      ? new Set(firsts.map((p) => key({ ...p, source: "" }))).size < firsts.length
      : new Set(firsts.map((p) => p[f])).size > 1
  );
  const fields = varying.length > 0 ? varying : ["transport" as const];
  return [...groups.values()].map((g) => ({
    label: fields.map((f) => g[0][f]).filter((v) => v !== "").join(" "),
    primitive: g[0].primitive,
    procs: g[0].procs,
    points: new Map(g.map((p) => [p.floats, p])),
  }));
}

/** Per primitive and rank count, the size ranges over which each curve is fastest. */
export function crossovers(curves: Curve[]): Crossover[] {
  const panels = new Map<string, Curve[]>();
  for (const c of curves) {
    const k = `${c.primitive}\u0000${c.procs}`;
    panels.set(k, [...(panels.get(k) ?? []), c]);
  }
  const out: Crossover[] = [];
  for (const panel of panels.values()) {
    const sizes = [...new Set(panel.flatMap((c) => [...c.points.keys()]))].sort((a, b) => a - b);
    let run: { from: number; to: number; fastest: string; ratios: number[] } | undefined;
    const flush = () => {
      if (!run) return;
      out.push({
        primitive: panel[0].primitive,
        procs: panel[0].procs,
        fromFloats: run.from,
        toFloats: run.to,
        fastest: run.fastest,
        margin: median(run.ratios),
      });
    };
    for (const size of sizes) {
      const times = panel
        .map((c) => ({ label: c.label, us: c.points.get(size)?.time_us }))
        .filter((t): t is { label: string; us: number } => t.us !== undefined && t.us > 0)
        .sort((a, b) => a.us - b.us);
      if (times.length === 0) continue;
      const ratio = times.length > 1 ? times[1].us / times[0].us : NaN;
      if (run?.fastest === times[0].label) {
        run.to = size;
        run.ratios.push(ratio);
      } else {
        flush();
        run = { from: size, to: size, fastest: times[0].label, ratios: [ratio] };
      }
    }
    flush();
  }
  return out;
}

function median(values: number[]): number {
  const v = values.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  return v.length === 0 ? NaN : v[Math.floor((v.length - 1) / 2)];
}

/** The crossovers as an aligned text table plus one sentence per primitive and rank count. */
export function formatCrossovers(rows: Crossover[]): string {
  const header = ["primitive", "procs", "from_floats", "to_floats", "fastest", "margin"];
  const cells = rows.map((r) => [
    r.primitive,
    String(r.procs),
    String(r.fromFloats),
    String(r.toFloats),
    r.fastest,
    Number.isNaN(r.margin) ? "-" : `${r.margin.toFixed(2)}x`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) => c.map((x, i) => x.padEnd(widths[i])).join("  ").trimEnd();
  const sentences: string[] = [];
  const panels = new Map<string, Crossover[]>();
  for (const r of rows) {
    const k = `${r.primitive} at ${r.procs} ranks`;
    panels.set(k, [...(panels.get(k) ?? []), r]);
  }
  for (const [panel, ranges] of panels) {
    const parts = ranges.map((r, i) =>
      ranges.length === 1
        ? `${r.fastest} is fastest at every size`
        : i === 0
        ? `below ${ranges[1].fromFloats} floats ${r.fastest} is fastest`
        : i === ranges.length - 1
        ? `from ${r.fromFloats} floats ${r.fastest}`
        : `from ${r.fromFloats} to ${r.toFloats} ${r.fastest}`
    );
    sentences.push(`For ${panel}, ${parts.join("; ")}.`);
  }
  return [line(header), ...cells.map(line), "", ...sentences].join("\n");
}
