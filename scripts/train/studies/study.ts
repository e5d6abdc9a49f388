/**
 * What every study of `deno task train-study` shares: the rows it records as its runs finish
 * (written at once, so an interrupted study keeps them), what it hands back (notes and a chart),
 * the context its runs go through, and the chart and table helpers.
 * @module
 */

import { stringify } from "../../../deno/mod.ts";
import type { TopLevelSpec } from "vega-lite";
import { htmlPage, htmlTable, specToSvg } from "../../../bench/compare/chart.ts";
import type { RunMetadata } from "../../../bench/report_format.ts";
import type { Breakdown } from "../../../trainer/breakdown.ts";
import type { Mnist } from "../../../trainer/mnist.ts";
import type { TrainSummary } from "../../../trainer/epochs.ts";
import { writeAtomically, writeTogether } from "../../../deno/mod.ts";

/** A row of a study's table: column → value. */
export type Row = Record<string, string | number>;

/** What a study hands back once its runs are done (its rows were recorded as they finished). */
export interface StudyResult {
  /** Lines printed under the table (fits, notes). */
  notes: string[];
  /** The chart of the recorded rows. */
  chart(rows: Row[]): TopLevelSpec;
}

/** What studies share: the data, the common flags, one training run, and the rows' record. */
export interface StudyContext {
  mnist: Mnist;
  epochs: string;
  /** Why GPU runs are left out, or undefined when they run. */
  noGpu?: string;
  /** Why no WebGPU device opens at all (managed memory needs one), or undefined. */
  noAdapter?: string;
  /** Trains with the common flags and `flags`; resolves with rank 0's summary. */
  train(flags: Record<string, string>, label: string): Promise<TrainSummary>;
  /** Measures the batch breakdown of a one-rank run with `flags`. */
  breakdown(flags: Record<string, string>, label: string): Promise<Breakdown>;
  /**
   * Runs the rank program `module` with `args` on one rank (with a device when `gpu`);
   * resolves with what it returns.
   */
  measure<T>(module: URL, args: unknown, options: { gpu: boolean }, label: string): Promise<T>;
  /** Records one finished row (written at once). */
  record(row: Row): void;
}

/** A study: its runs, recording a row as each finishes. */
export type Study = (ctx: StudyContext) => Promise<StudyResult>;

/**
 * A study's files in `<out>/<study>`: the CSV and the JSON are replaced (atomically) with every row
 * so far as each is recorded, so an interrupted study keeps its finished runs;
 * {@linkcode StudyFiles.finish} adds the notes, the chart (SVG) and the HTML report.
 */
export class StudyFiles {
  readonly base: string;
  readonly rows: Row[] = [];
  readonly #study: string;
  readonly #metadata: RunMetadata;

  constructor(out: string, study: string, metadata: RunMetadata) {
    this.base = `${out}/${study}`;
    this.#study = study;
    this.#metadata = metadata;
    Deno.mkdirSync(out, { recursive: true });
    for (const ext of ["csv", "json", "svg", "html"]) removeIfPresent(`${this.base}.${ext}`);
  }

  /** Adds `row` to the CSV and the JSON. */
  record(row: Row): void {
    this.rows.push(row);
    this.#writeRows([]);
  }

  /** Writes the notes into the JSON, the chart as SVG and the HTML report. */
  async finish(result: StudyResult): Promise<void> {
    this.#writeRows(result.notes);
    const svg = await specToSvg(result.chart(this.rows));
    writeAtomically(`${this.base}.svg`, svg);
    const columns = Object.keys(this.rows[0] ?? {});
    writeAtomically(
      `${this.base}.html`,
      htmlPage(
        `dccl train-study ${this.#study}`,
        `${svg}\n${htmlTable(columns, this.rows.map((r) => columns.map((c) => r[c])))}\n` +
          result.notes.map((n) => `<p>${n}</p>`).join("\n"),
      ),
    );
  }

  #writeRows(notes: string[]): void {
    const columns = Object.keys(this.rows[0]);
    const doc = { metadata: this.#metadata, study: this.#study, rows: this.rows, notes };
    writeTogether([
      [
        `${this.base}.csv`,
        () => stringify([columns, ...this.rows.map((r) => columns.map((c) => r[c]))]),
      ],
      [`${this.base}.json`, () => JSON.stringify(doc, null, 1)],
    ]);
  }
}

function removeIfPresent(path: string): void {
  try {
    Deno.removeSync(path);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
}

export const round = (x: number, digits = 3): number => Number(x.toFixed(digits));
export const pct = (x: number): number => round(100 * x, 2);
export const SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json";

/**
 * An accuracy axis (percent) over at least `span` points around the values of `field`, so that
 * runs a few tenths apart do not read as a cliff.
 */
export function accuracyScale(rows: Row[], field: string, span = 10): { domain: number[] } {
  const values = rows.map((r) => Number(r[field])).filter(Number.isFinite);
  const lo = Math.min(...values), hi = Math.max(...values);
  const pad = Math.max(0, span - (hi - lo)) / 2;
  let bottom = Math.max(0, Math.floor(lo - pad)), top = Math.min(100, Math.ceil(hi + pad));
  if (top - bottom < span) bottom = Math.max(0, top - span);
  if (top - bottom < span) top = Math.min(100, bottom + span);
  return { domain: [bottom, top] };
}

/** Bars of `y` per `x`, side by side per `color`, in a panel per `facet`, under `title`. */
export function barChart(
  rows: Row[],
  x: string,
  y: string,
  color: string,
  facet: string | undefined,
  yTitle: string,
  title: string,
): TopLevelSpec {
  const spec = {
    width: 300,
    height: 240,
    mark: "bar" as const,
    encoding: {
      x: { field: x, type: "nominal" as const, title: null },
      xOffset: { field: color, type: "nominal" as const },
      y: { field: y, type: "quantitative" as const, title: yTitle },
      color: { field: color, type: "nominal" as const },
    },
  };
  return facet
    ? {
      $schema: SCHEMA,
      title,
      data: { values: rows },
      facet: { field: facet, type: "nominal" },
      spec,
    }
    : { $schema: SCHEMA, title, data: { values: rows }, ...spec };
}

/** The table as aligned text. */
export function formatTable(rows: Row[]): string {
  const columns = Object.keys(rows[0] ?? {});
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c]).length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padStart(widths[i])).join("  ");
  return [line(columns), ...rows.map((r) => line(columns.map((c) => String(r[c]))))].join("\n");
}
