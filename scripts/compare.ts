/**
 * `deno task compare A.csv B.csv … [--out report.html]`: overlays bandwidth curves from dccl
 * CSV/JSON, OSU and nccl-tests output as SVG and an HTML report, and prints which curve is fastest
 * over which sizes.
 * @module
 */

import { renderHtml, renderSvg } from "../bench/compare/chart.ts";
import {
  crossovers,
  CurveSet,
  formatCrossovers,
  wrongResults,
} from "../bench/compare/crossover.ts";
import { readResults, ResultFormatError } from "../bench/compare/results.ts";
import { MAX_PROCS } from "./_benchmark.ts";
import { dirname } from "node:path";
import {
  type FlagSpec,
  integer,
  parseFlags,
  usage,
  UsageError,
  userPath,
  writableFolder,
} from "./_flags.ts";

const FLAGS: Record<string, FlagSpec> = {
  out: { help: "HTML report path; the SVG is written next to it", default: "out/compare.html" },
  procs: { help: "ranks of OSU inputs (their output does not say)", default: "2" },
  tolerance: {
    help: "percent a curve may trail the fastest at a size and still count as fastest there",
    default: "10",
  },
};

async function main(argv: string[]): Promise<number> {
  let files: string[], out: string, procs: number, tolerance: number;
  try {
    const positionals: string[] = [];
    const values = parseFlags(FLAGS, argv, positionals);
    if (values.help) {
      console.log(
        usage("compare A.csv B.csv …", "Overlays curves and prints the crossovers.", FLAGS),
      );
      return 0;
    }
    // A run's CSV and its JSON sidecar hold the same rows (as `dir/*` passes them): read one.
    const inputs = positionals.map((p) => userPath(p));
    files = inputs.filter((f) =>
      !(/\.json$/i.test(f) && inputs.includes(f.replace(/\.json$/i, ".csv")))
    );
    if (files.length === 0) {
      throw new UsageError("no input files: pass dccl CSV/JSON, OSU or nccl-tests output files");
    }
    out = userPath(values.out!);
    if (!out.endsWith(".html")) {
      throw new UsageError(`--out ${out} is not accepted: expected *.html`);
    }
    writableFolder("out", dirname(out), out);
    procs = integer("procs", values.procs!, 1, MAX_PROCS);
    tolerance = integer("tolerance", values.tolerance!, 0, 100) / 100;
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    console.error(`dccl compare: ${e.message}`);
    return 2;
  }

  const set = new CurveSet();
  for (const file of files) {
    try {
      for await (const point of readResults(file, procs)) set.add(point);
    } catch (e) {
      if (!(e instanceof Error)) throw e;
      // A missing file or a folder: the system's words; a bad file: the reader's.
      const why = e instanceof ResultFormatError
        ? e.message
        : `${file}: cannot read it (${e.name}${e.name === "IsADirectory" ? ": pass files" : ""})`;
      console.error(`dccl compare: ${why.split("\n")[0]}`);
      return 2;
    }
  }
  if (set.repeated > 0) {
    console.error(
      `dccl compare: note: ${set.repeated} rows repeated a curve at a size it already had; ` +
        `the last of each counts`,
    );
  }
  const curves = set.curves();
  const rows = crossovers(curves, { tolerance });
  const wrong = wrongResults(curves);
  if (wrong.length > 0) {
    console.error(
      `dccl compare: warning: ${wrong.length} curves have sizes with wrong results; they are ` +
        `flagged and left out of the comparison`,
    );
  }
  const svg = await renderSvg(curves);
  const svgPath = out.replace(/\.html$/, ".svg");
  try {
    Deno.mkdirSync(dirname(out), { recursive: true });
    Deno.writeTextFileSync(svgPath, svg);
    Deno.writeTextFileSync(out, renderHtml(svg, rows, files, tolerance, wrong));
  } catch (e) {
    console.error(`dccl compare: --out ${out}: cannot write the report (${(e as Error).name})`);
    return 2;
  }
  console.log(formatCrossovers(rows, wrong));
  console.log(`\nchart: ${svgPath}\nreport: ${out}`);
  return 0;
}

Deno.exit(await main(Deno.args));
