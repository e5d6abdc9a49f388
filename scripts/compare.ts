/**
 * `deno task compare A.csv B.csv … [--out report.html]`: overlays bandwidth curves from dccl
 * CSV/JSON, OSU and nccl-tests output as SVG and an HTML report, and prints which curve is fastest
 * over which sizes.
 * @module
 */

import { dirname } from "node:path";
import { renderHtml, renderSvg } from "../bench/compare/chart.ts";
import {
  crossovers,
  CurveSet,
  DEFAULT_TOLERANCE,
  formatCrossovers,
  wrongResults,
} from "../bench/compare/crossover.ts";
import { ResultFormatError } from "../bench/compare/results.ts";
import { readResultsFile } from "../deno/bench/result_files.ts";
import { writeTogether } from "../deno/files/atomic_file.ts";
import { type FlagSpec, integer, UsageError, userPath, writableFolder } from "./_flags.ts";
import { MAX_PROCS, type Task, taskMain } from "./_task.ts";

const FLAGS: Record<string, FlagSpec> = {
  out: {
    help: "HTML report path; the SVG is written next to it",
    default: "out/compare.html",
    path: true,
  },
  procs: {
    help: "ranks of OSU collective inputs whose name does not say (osu_allreduce_p4.txt, " +
      "_np4, -n4) and that carry no :RANKS suffix (osu.txt:4); point-to-point ones are 2",
    default: "2",
  },
  tolerance: {
    help: "percent a curve may trail the fastest at a size and still count as fastest there",
    default: String(DEFAULT_TOLERANCE * 100),
  },
};

/** An input file, and its ranks where the command line or its name says them (OSU's do not). */
interface InputFile {
  path: string;
  procs?: number;
}

interface ComparePlan {
  files: InputFile[];
  out: string;
  procs: number;
  tolerance: number;
}

/**
 * Reads every file's curves until `signal` aborts; a file that cannot be read is a UsageError
 * naming it.
 */
async function readCurves(plan: ComparePlan, signal: AbortSignal): Promise<CurveSet> {
  const set = new CurveSet();
  // OSU collective files whose ranks nothing said, by primitive: two of them may be two groups.
  const unsaid = new Map<string, string>();
  for (const { path, procs } of plan.files) {
    try {
      // NaN asks the reader to mark points whose ranks the file does not say.
      for await (const point of readResultsFile(path, procs ?? NaN)) {
        signal.throwIfAborted();
        if (Number.isNaN(point.procs)) {
          const other = unsaid.get(point.primitive);
          if (other !== undefined && other !== path) {
            throw new UsageError(
              `${other} and ${path}: OSU output does not say its ranks, and two runs of ` +
                `${point.primitive} may be two group sizes; give each its ranks (${other}:2 ` +
                `${path}:4) or name them so (osu_${point.primitive}_p4.txt)`,
            );
          }
          unsaid.set(point.primitive, path);
          point.procs = plan.procs;
        }
        set.add(point);
      }
    } catch (e) {
      if (!(e instanceof Error) || e === signal.reason || e instanceof UsageError) throw e;
      // A missing file or a folder: the system's words; a bad file: the reader's.
      const why = e instanceof ResultFormatError
        ? e.message
        : `${path}: cannot read it (${e.name}${e.name === "IsADirectory" ? ": pass files" : ""})`;
      throw new UsageError(why.split("\n")[0]);
    }
  }
  return set;
}

/**
 * `path` with its ranks: a `:RANKS` suffix (`osu.txt:4`), else a rank count its name gives
 * (`osu_allreduce_p4.txt`, `_np4`, `-n4`, `_4ranks`), else none.
 */
function inputFile(given: string): InputFile {
  const suffix = given.match(/^(.+):(\d+)$/);
  const path = userPath(suffix ? suffix[1] : given);
  const named = path.split("/").at(-1)!.match(
    /(?:[_-](?:n?p|n)(\d+)|[_-](\d+)[_-]?ranks?)(?=[._-]|$)/i,
  );
  const procs = suffix ? suffix[2] : named?.[1] ?? named?.[2];
  return { path, procs: procs === undefined ? undefined : integer("procs", procs, 1, MAX_PROCS) };
}

const COMPARE: Task<ComparePlan> = {
  name: "compare",
  synopsis: "compare A.csv B.csv …",
  summary: "Overlays curves and prints the crossovers.",
  flags: FLAGS,
  positionals: true,
  plan(values, positionals) {
    // A run's CSV and its JSON sidecar hold the same rows (as `dir/*` passes them): read one.
    const inputs = positionals.map(inputFile);
    const paths = inputs.map((f) => f.path);
    const files = inputs.filter(({ path }) =>
      !(/\.json$/i.test(path) && paths.includes(path.replace(/\.json$/i, ".csv")))
    );
    if (files.length === 0) {
      throw new UsageError("no input files: pass dccl CSV/JSON, OSU or nccl-tests output files");
    }
    const out = values.out!;
    if (!out.endsWith(".html")) {
      throw new UsageError(`--out ${out} is not accepted: expected *.html`);
    }
    writableFolder("out", dirname(out), out);
    return {
      files,
      out,
      procs: integer("procs", values.procs!, 1, MAX_PROCS),
      tolerance: integer("tolerance", values.tolerance!, 0, 100) / 100,
    };
  },
  async run(plan, signal) {
    const set = await readCurves(plan, signal);
    if (set.repeated > 0) {
      console.error(
        `dccl compare: note: ${set.repeated} rows repeated a curve at a size it already had; ` +
          `the last of each counts`,
      );
    }
    const curves = set.curves();
    const rows = crossovers(curves, { tolerance: plan.tolerance });
    const wrong = wrongResults(curves);
    if (wrong.length > 0) {
      console.error(
        `dccl compare: warning: ${wrong.length} curves have sizes with wrong results; they are ` +
          `flagged and left out of the comparison`,
      );
    }
    const svg = await renderSvg(curves);
    signal.throwIfAborted();
    const { out } = plan;
    const svgPath = out.replace(/\.html$/, ".svg");
    Deno.mkdirSync(dirname(out), { recursive: true });
    writeTogether([
      [svgPath, () => svg],
      [out, () => renderHtml(svg, rows, plan.files.map((f) => f.path), plan.tolerance, wrong)],
    ]);
    console.log(formatCrossovers(rows, wrong));
    console.log(`\nchart: ${svgPath}\nreport: ${out}`);
    return 0;
  },
};

Deno.exit(await taskMain(COMPARE, Deno.args));
