/**
 * The work of `deno task compare`, in a worker of its own: reading, folding and drawing are long
 * stretches of CPU on big inputs, and this way the task's thread answers Ctrl-C and SIGTERM at
 * once (it terminates the worker). Posts a {@linkcode CompareOutcome}.
 * @module
 */

import { renderHtml, renderSvg } from "../../bench/compare/chart.ts";
import {
  crossovers,
  CurveSet,
  formatCrossovers,
  wrongResults,
} from "../../bench/compare/crossover.ts";
import { pointBy, ResultFormatError, type TimeMetric } from "../../bench/compare/results.ts";
import { readResultsFile } from "../../deno/mod.ts";

/** An input file, and its ranks where the command line or its name says them (OSU's do not). */
export interface InputFile {
  path: string;
  procs?: number;
}

/** What the worker is asked to compare. */
export interface CompareJob {
  files: InputFile[];
  /** Ranks of OSU collective inputs nothing else gives ranks to. */
  procs: number;
  tolerance: number;
  /** Plot the share of the machine's limit instead of Gb/s. */
  ofLimit: boolean;
  /** The time compared and drawn: the mean (`time_us`), the best case or a percentile. */
  metric: TimeMetric;
}

/** What the worker answers: the outputs and notes, or a one-line refusal of bad input. */
export type CompareOutcome =
  | { svg: string; html: string; text: string; notes: string[] }
  | { usage: string };

/** A file that cannot be compared, in one line. */
class BadInput extends Error {}

/**
 * Reads every file's curves; a file that cannot be read is a BadInput naming it.
 */
async function readCurves(plan: CompareJob): Promise<{ set: CurveSet; without: number }> {
  const set = new CurveSet();
  let without = 0;
  // OSU collective files whose ranks nothing said, by primitive: two of them may be two groups.
  const unsaid = new Map<string, string>();
  for (const { path, procs } of plan.files) {
    try {
      // NaN asks the reader to mark points whose ranks the file does not say.
      for await (const point of readResultsFile(path, procs ?? NaN)) {
        if (Number.isNaN(point.procs)) {
          const other = unsaid.get(point.primitive);
          if (other !== undefined && other !== path) {
            throw new BadInput(
              `${other} and ${path}: OSU output does not say its ranks, and two runs of ` +
                `${point.primitive} may be two group sizes; give each its ranks (${other}:2 ` +
                `${path}:4) or name them so (osu_${point.primitive}_p4.txt)`,
            );
          }
          unsaid.set(point.primitive, path);
          point.procs = plan.procs;
        }
        const timed = pointBy(point, plan.metric);
        if (timed) set.add(timed);
        else without++;
      }
    } catch (e) {
      if (!(e instanceof Error) || e instanceof BadInput) throw e;
      // A missing file or a folder: the system's words; a bad file: the reader's.
      const why = e instanceof ResultFormatError
        ? e.message
        : `${path}: cannot read it (${e.name}${e.name === "IsADirectory" ? ": pass files" : ""})`;
      throw new BadInput(why.split("\n")[0]);
    }
  }
  return { set, without };
}

/** Reads, folds and draws `job`: the report, the chart and the table's text. */
async function compare(job: CompareJob): Promise<CompareOutcome> {
  const { set, without } = await readCurves(job);
  const notes: string[] = [];
  if (without > 0) {
    notes.push(
      `note: ${without} rows carry no ${job.metric} (other tools' output, older runs, or a p99.9 ` +
        `under 1000 samples): left out`,
    );
  }
  if (set.curves().length === 0) throw new BadInput(`no row carries ${job.metric}`);
  if (set.repeated > 0) {
    notes.push(
      `note: ${set.repeated} rows repeated a curve at a size it already had; the last of each ` +
        `counts`,
    );
  }
  const curves = set.curves();
  const rows = crossovers(curves, { tolerance: job.tolerance });
  const wrong = wrongResults(curves);
  if (wrong.length > 0) {
    notes.push(
      `warning: ${wrong.length} curves have sizes with wrong results; they are flagged and left ` +
        `out of the comparison`,
    );
  }
  if (job.ofLimit) {
    const bare = curves.filter((c) =>
      [...c.points.values()].every((p) => p.pct_limit === undefined)
    );
    if (bare.length > 0) {
      notes.push(
        `note: ${bare.length} curves carry no share of a machine's limit (other tools' output, ` +
          `or runs before deno task limits): only their time is drawn`,
      );
    }
  }
  const svg = await renderSvg(curves, { ofLimit: job.ofLimit });
  const html = renderHtml(svg, rows, job.files.map((f) => f.path), job.tolerance, wrong);
  return { svg, html, text: formatCrossovers(rows, wrong), notes };
}

const scope = self as unknown as {
  onmessage: (e: MessageEvent<CompareJob>) => void;
  postMessage(outcome: CompareOutcome): void;
};

scope.onmessage = async ({ data }) => {
  try {
    scope.postMessage(await compare(data));
  } catch (e) {
    if (!(e instanceof BadInput)) throw e;
    scope.postMessage({ usage: e.message });
  }
};
