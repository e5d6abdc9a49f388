/**
 * `deno task compare A.csv B.csv … [--out report.html]`: overlays bandwidth curves from dccl
 * CSV/JSON, OSU and nccl-tests output as SVG and an HTML report, and prints which curve is fastest
 * over which sizes.
 * @module
 */

import { dirname } from "node:path";
import { DEFAULT_TOLERANCE } from "../bench/compare/crossover.ts";
import { TIME_METRICS } from "../bench/compare/results.ts";
import { writeTogether } from "../deno/mod.ts";
import type { CompareJob, CompareOutcome, InputFile } from "./compare/compare_work.ts";
import { defineFlags, integer, UsageError, userPath, writableFolder } from "./common/flags.ts";
import { MAX_PROCS, type Task, taskMain } from "./common/task.ts";
import { sameBits } from "./compare/same_bits.ts";

const FLAGS = defineFlags({
  out: {
    help: "HTML report path; the SVG is written next to it",
    default: "out/compare.html",
    path: true,
  },
  procs: {
    help: "ranks of OSU collective inputs whose name does not say (osu_allreduce_p4.txt, " +
      "_np4, -n4) and that carry no :RANKS suffix (osu.txt:4); point-to-point ones are 2",
    kind: "integer",
    min: 1,
    max: MAX_PROCS,
    default: 2,
  },
  tolerance: {
    help: "percent a curve may trail the fastest at a size and still count as fastest there",
    kind: "integer",
    min: 0,
    max: 100,
    default: DEFAULT_TOLERANCE * 100,
  },
  metric: {
    help: "the time compared and drawn: time_us (the mean), best_us, p50_us, p90_us, p99_us or " +
      "p999_us (dccl rows' per-iteration samples)",
    kind: "choice",
    choices: TIME_METRICS,
    default: "time_us",
  },
  "of-limit": {
    help: "plot each size's share of the machine's limit (dccl rows' pct_limit) for Gb/s",
    kind: "switch",
  },
  "same-bits": {
    help: "assert that --reproducible runs gave the same bits wherever they share a cell " +
      "(primitive, dtype, op, ranks, size), whatever their algorithm, transport or memory",
    kind: "switch",
  },
});

interface ComparePlan extends CompareJob {
  out: string;
  /** `--same-bits`: what the check found, to print with the report. */
  sameBits?: string;
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

const COMPARE: Task<ComparePlan, typeof FLAGS> = {
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
    const { out } = values;
    if (!out.endsWith(".html")) {
      throw new UsageError(`--out ${out} is not accepted: expected *.html`);
    }
    writableFolder("out", dirname(out), out);
    return {
      files,
      out,
      sameBits: values["same-bits"] ? sameBits(files.map((f) => f.path)) : undefined,
      procs: values.procs,
      tolerance: values.tolerance / 100,
      ofLimit: values["of-limit"],
      metric: values.metric,
    };
  },
  async run(plan, signal) {
    const { out: _, sameBits: said, ...job } = plan;
    const outcome = await inWorker(job, signal);
    if ("usage" in outcome) throw new UsageError(outcome.usage);
    for (const note of outcome.notes) console.error(`dccl compare: ${note}`);
    const { out } = plan;
    const svgPath = out.replace(/\.html$/, ".svg");
    Deno.mkdirSync(dirname(out), { recursive: true });
    writeTogether([[svgPath, () => outcome.svg], [out, () => outcome.html]]);
    console.log(outcome.text);
    if (said) console.log(`\n${said}`);
    console.log(`\nchart: ${svgPath}\nreport: ${out}`);
    return 0;
  },
};

/** Runs `job` in the worker (compare/compare_work.ts); a signal terminates it and rejects at once. */
function inWorker(job: CompareJob, signal: AbortSignal): Promise<CompareOutcome> {
  const worker = new Worker(new URL("./compare/compare_work.ts", import.meta.url), {
    type: "module",
  });
  return new Promise<CompareOutcome>((resolve, reject) => {
    const stop = () => reject(signal.reason);
    signal.addEventListener("abort", stop, { once: true });
    worker.onmessage = ({ data }) => resolve(data);
    worker.onerror = (e) => {
      e.preventDefault();
      reject(new Error(e.message));
    };
    worker.postMessage(job);
  }).finally(() => worker.terminate());
}

Deno.exit(await taskMain(COMPARE, Deno.args));
