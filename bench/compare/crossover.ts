/**
 * Curves and crossovers: groups points into one curve per file × primitive × ranks × transport ×
 * memory × algorithm, and finds, per primitive and rank count, which curve is fastest over which
 * size range (the founding study's "below N floats A is fastest, above it B"). A point whose
 * result had wrong elements is never compared: it is listed apart.
 * @module
 */

import type { Point } from "./results.ts";

/** One line of the chart. */
export interface Curve {
  /** Shortest name that tells this curve apart from the others being compared. */
  label: string;
  /** The primitive it measures. */
  primitive: string;
  /** Ranks it ran on. */
  procs: number;
  /** Points by size in floats. */
  points: Map<number, Point>;
}

/** One size range with one fastest curve. */
export interface Crossover {
  /** The primitive compared. */
  primitive: string;
  /** Ranks compared. */
  procs: number;
  /** First size of the range, in 4-byte floats. */
  fromFloats: number;
  /** Last size of the range, in 4-byte floats. */
  toFloats: number;
  /** The label of the fastest curve over the range. */
  fastest: string;
  /**
   * Other curves level with it: their median over the range of (their time / its time) is within
   * the tolerance.
   */
  level: string[];
  /**
   * The smallest of the other curves' median ratios (the runner-up's); NaN when nothing else ran.
   * A margin within the tolerance always has its curve among `level`.
   */
  margin: number;
}

/** How far behind the fastest a curve counts as level with it, unless told: 10%. */
export const DEFAULT_TOLERANCE = 0.1;

/** Options of {@linkcode crossovers}. */
export interface CrossoverOptions {
  /**
   * How much slower than the fastest (a fraction) a curve may be at a size and still count as
   * fastest there: measurements this close are noise, not a crossover. 0 reports every change.
   * @default {0.1}
   */
  tolerance?: number;
}

const LABEL_FIELDS = ["transport", "threads", "memory", "algorithm", "type", "source"] as const;

/**
 * Points gathered into curves as they are read, so that only one point per curve and size is
 * held however many rows repeat it (the last one read counts).
 */
export class CurveSet {
  /** Points of each curve, by size. */
  readonly #groups = new Map<string, Map<number, Point>>();
  /** Rows that repeated a curve's size. */
  repeated = 0;

  /** Adds one point. */
  add(p: Point): void {
    const k = key(p);
    let group = this.#groups.get(k);
    if (!group) this.#groups.set(k, group = new Map());
    if (group.has(p.floats)) this.repeated++;
    group.set(p.floats, p);
  }

  /** The curves, labelled by the fields that differ between them. */
  curves(): Curve[] {
    const groups = [...this.#groups.values()];
    const firsts = groups.map((g) => g.values().next().value!);
    // The source (file) only matters when two files hold otherwise identical curves.
    // A tool that does not say its type (OSU) never makes the type vary.
    const varying = LABEL_FIELDS.filter((f) =>
      f === "source"
        ? new Set(firsts.map((p) => key({ ...p, source: "" }))).size < firsts.length
        : new Set(firsts.map((p) => p[f]).filter((v) => v !== "")).size > 1
    );
    const fields = varying.length > 0 ? varying : ["transport" as const];
    const text = (p: Point, f: typeof fields[number]) =>
      f === "threads" ? `×${p.threads} threads` : String(p[f]);
    return groups.map((points, i) => ({
      label: fields.map((f) => text(firsts[i], f)).filter((v) => v !== "").join(" "),
      primitive: firsts[i].primitive,
      procs: firsts[i].procs,
      points,
    }));
  }
}

function key(p: Point): string {
  return [p.primitive, p.procs, ...LABEL_FIELDS.map((f) => p[f])].join("\u0000");
}

/** Groups points into curves labelled by the fields that differ between curves. */
export function toCurves(points: Iterable<Point>): Curve[] {
  const set = new CurveSet();
  for (const p of points) set.add(p);
  return set.curves();
}

/** Sizes of one curve whose results had wrong elements: never compared. */
export interface WrongResults {
  /** The primitive measured. */
  primitive: string;
  /** Ranks it ran on. */
  procs: number;
  /** The curve's label. */
  curve: string;
  /** The sizes, in floats, and the wrong elements at each. */
  sizes: [number, number][];
}

/** The points of `curves` with wrong elements, one entry per curve that has any. */
export function wrongResults(curves: Curve[]): WrongResults[] {
  return curves.flatMap((c) => {
    const sizes = [...c.points.values()].filter((p) => p.wrong > 0)
      .sort((a, b) => a.floats - b.floats)
      .map((p): [number, number] => [p.floats, p.wrong]);
    return sizes.length === 0
      ? []
      : [{ primitive: c.primitive, procs: c.procs, curve: c.label, sizes }];
  });
}

/**
 * Per primitive and rank count, the size ranges over which each curve is fastest. At each size the
 * curves within `tolerance` of the fastest contend for it; a range lasts while some curve contends
 * at every one of its sizes (so the fewest ranges cover the sizes) and names, among those, the
 * curve closest to the fastest on average; the others are level with it. With a tolerance, one
 * size led by another curve between two ranges of the same curve is taken for noise and joins
 * them.
 */
export function crossovers(curves: Curve[], options?: CrossoverOptions): Crossover[] {
  options ??= {};
  const tolerance = options.tolerance ?? DEFAULT_TOLERANCE;
  const panels = new Map<string, Curve[]>();
  for (const c of curves) {
    const k = `${c.primitive}\u0000${c.procs}`;
    const panel = panels.get(k);
    if (panel) panel.push(c);
    else panels.set(k, [c]);
  }
  const out: Crossover[] = [];
  for (const panel of panels.values()) {
    const sizes = [...new Set(panel.flatMap((c) => [...c.points.keys()]))].sort((a, b) => a - b);
    const rows = sizes
      .map((floats) => ({
        floats,
        // A wrong result is no result: it never leads nor counts as level.
        us: panel.map((c) => c.points.get(floats))
          .map((p) => p && p.wrong === 0 && p.time_us > 0 ? p.time_us : NaN),
      }))
      .filter((row) => row.us.some((t) => !Number.isNaN(t)));
    let ranges = leadRanges(rows, tolerance);
    if (tolerance > 0) ranges = joinBlips(ranges);
    for (const r of ranges) {
      const ratiosTo = (lead: number) =>
        panel.map((_, i) =>
          i === lead ? NaN : median(r.rows.map((row) => row.us[i] / row.us[lead]))
        );
      let ratios = ratiosTo(r.lead);
      // The fastest is never slower at the median than another curve over its range: a curve
      // ahead of it there leads instead (the log-average pick can differ on skewed ranges).
      for (let turn = 0; turn < panel.length && smallest(ratios).value < 1; turn++) {
        r.lead = smallest(ratios).index;
        ratios = ratiosTo(r.lead);
      }
      const margin = smallest(ratios).value;
      out.push({
        primitive: panel[0].primitive,
        procs: panel[0].procs,
        fromFloats: r.rows[0].floats,
        toFloats: r.rows.at(-1)!.floats,
        fastest: panel[r.lead].label,
        level: panel.flatMap((c, i) => ratios[i] <= 1 + tolerance ? [c.label] : []),
        margin,
      });
    }
  }
  return out;
}

/** One size: every curve's µs per op (NaN where a curve has no point). */
interface SizeRow {
  floats: number;
  us: number[];
}

/** Consecutive sizes led by curve index `lead`. */
interface LeadRange {
  lead: number;
  rows: SizeRow[];
}

function leadRanges(rows: SizeRow[], tolerance: number): LeadRange[] {
  const ranges: LeadRange[] = [];
  let rangeRows: SizeRow[] = [], candidates: number[] = [];
  const close = () => {
    if (rangeRows.length === 0) return;
    // Of the curves that contended throughout, the one closest to the fastest on (log) average.
    const behind = (c: number) =>
      rangeRows.reduce((sum, row) => sum + Math.log(row.us[c] / fastest(row.us)), 0);
    const lead = candidates.reduce((best, c) => behind(c) < behind(best) ? c : best);
    ranges.push({ lead, rows: rangeRows });
  };
  for (const row of rows) {
    const limit = fastest(row.us) * (1 + tolerance);
    const contenders = row.us.flatMap((t, c) => t <= limit ? [c] : []);
    const kept = candidates.filter((c) => contenders.includes(c));
    if (kept.length > 0) {
      candidates = kept;
      rangeRows.push(row);
    } else {
      close();
      candidates = contenders;
      rangeRows = [row];
    }
  }
  close();
  return ranges;
}

/** Joins A | one size of B | A into one range of A. */
function joinBlips(ranges: LeadRange[]): LeadRange[] {
  const out: LeadRange[] = [];
  for (const r of ranges) {
    const [before, blip] = [out.at(-2), out.at(-1)];
    const joins = before && blip && blip.rows.length === 1 && before.lead === r.lead &&
      !Number.isNaN(blip.rows[0].us[r.lead]);
    if (joins) {
      // Appended in place: a noisy curve of a million sizes joins that many times.
      out.pop();
      for (const row of blip.rows) before.rows.push(row);
      for (const row of r.rows) before.rows.push(row);
    } else {
      out.push(r);
    }
  }
  return out;
}

/** The smallest of `values` that is a number, and where it is (NaN, −1 when none is). */
function smallest(values: number[]): { value: number; index: number } {
  let value = NaN, index = -1;
  values.forEach((x, i) => {
    if (!Number.isNaN(x) && !(x >= value)) [value, index] = [x, i];
  });
  return { value, index };
}

function fastest(us: number[]): number {
  let min = Infinity;
  for (const t of us) if (t < min) min = t; // NaN compares false: skipped
  return min;
}

/** The fastest time among the curves other than `lead`; NaN when none ran. */
function median(values: number[]): number {
  const v = values.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  return v.length === 0 ? NaN : v[Math.floor((v.length - 1) / 2)];
}

/** The crossovers as an aligned text table plus one sentence per primitive and rank count. */
export function formatCrossovers(rows: Crossover[], wrong?: WrongResults[]): string {
  wrong ??= [];
  const header = [
    "primitive",
    "procs",
    "from_floats",
    "to_floats",
    "fastest",
    "margin",
    "level_with",
  ];
  const cells = rows.map((r) => [
    r.primitive,
    String(r.procs),
    String(r.fromFloats),
    String(r.toFloats),
    r.fastest,
    Number.isNaN(r.margin) ? "-" : `${r.margin.toFixed(2)}x`,
    r.level.join(", ") || "-",
  ]);
  const widths = header.map((h, i) => cells.reduce((w, c) => Math.max(w, c[i].length), h.length));
  const line = (c: string[]) => c.map((x, i) => x.padEnd(widths[i])).join("  ").trimEnd();
  const sentences: string[] = [];
  const panels = new Map<string, Crossover[]>();
  for (const r of rows) {
    const k = `${r.primitive} at ${r.procs} ranks`;
    const panel = panels.get(k);
    if (panel) panel.push(r);
    else panels.set(k, [r]);
  }
  for (const [panel, ranges] of panels) {
    const parts = ranges.map((r, i) => {
      const level = r.level.length > 0 ? ` (level with ${r.level.join(", ")})` : "";
      return (ranges.length === 1
        ? `${r.fastest} is fastest at every size`
        : i === 0
        ? `below ${ranges[1].fromFloats} floats ${r.fastest} is fastest`
        : i === ranges.length - 1
        ? `from ${r.fromFloats} floats ${r.fastest}`
        : r.fromFloats === r.toFloats
        ? `at ${r.fromFloats} ${r.fastest}`
        : `from ${r.fromFloats} to ${r.toFloats} ${r.fastest}`) + level;
    });
    sentences.push(`For ${panel}, ${parts.join("; ")}.`);
  }
  const flagged = wrong.map((w) =>
    `WRONG RESULTS, not compared: ${w.primitive} at ${w.procs} ranks, ${w.curve}: ` +
    w.sizes.map(([floats, n]) => `${n} wrong at ${floats} floats`).join(", ")
  );
  return [line(header), ...cells.map(line), "", ...sentences, ...flagged].join("\n");
}
