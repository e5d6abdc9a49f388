/**
 * `deno task sweep [flags]`: the whole matrix — primitives × transports × memory kinds × procs —
 * one CSV (and JSON sidecar) per combination plus an index.csv, skipping (and saying so) the
 * combinations a transport or primitive does not support.
 * @module
 */

import { stringify } from "../deno/mod.ts";
import { cliName, type Primitive, PRIMITIVE_LIST, primitiveNamed } from "../bench/cases.ts";
import { TRANSPORT_NAMES, type TransportName, TRANSPORTS } from "../deno/mod.ts";
import { MEMORY_KINDS } from "../internal.ts";
import { type MemoryKind } from "../core.ts";
import { boundsOf, checkDevice, runPlan, stoppedRun } from "./bench/benchmark.ts";
import { BENCHMARK_FLAGS, planRun, type RunPlan } from "./bench/benchmark_plan.ts";
import { defineFlags, type Flags, UsageError, writableFolder } from "./common/flags.ts";
import { collectMetadata } from "./common/metadata.ts";
import { writeAtomically, writeTogether } from "../deno/mod.ts";
import { type FailedRun, renderHtml, renderSvg } from "../bench/compare/chart.ts";
import {
  crossovers,
  CurveSet,
  DEFAULT_TOLERANCE,
  wrongResults,
} from "../bench/compare/crossover.ts";
import { timeLeft } from "../bench/progress.ts";
import { readResultsFile } from "../deno/mod.ts";
import { Interrupted, MAX_PROCS, stoppedBy, type Task, taskMain } from "./common/task.ts";

/** The primitives as the CLI spells them. */
const PRIMITIVE_NAMES = PRIMITIVE_LIST.map(cliName);
const { procs: _procs, transport: _transport, memory: _memory, csv: _csv, json: _json, ...shared } =
  BENCHMARK_FLAGS;

const FLAGS = defineFlags({
  primitives: {
    help: "comma-separated primitives",
    kind: "list",
    choices: PRIMITIVE_NAMES,
    default: PRIMITIVE_NAMES,
  },
  transports: {
    help: "comma-separated transports",
    kind: "list",
    choices: TRANSPORT_NAMES,
    default: TRANSPORT_NAMES,
  },
  memory: {
    help: "comma-separated memory kinds",
    kind: "list",
    choices: MEMORY_KINDS,
    default: MEMORY_KINDS,
  },
  procs: {
    help: "comma-separated rank counts",
    kind: "integers",
    min: 1,
    max: MAX_PROCS,
    default: [2, 4, 8],
  },
  out: { help: "directory for the CSVs and index.csv", default: "out/sweep", path: true },
  ...shared,
  max: { ...shared.max, default: "4M" },
});

const INDEX_COLUMNS = [
  "primitive",
  "transport",
  "memory",
  "procs",
  "status",
  "rows",
  "wrong",
  "csv",
  "note",
];

interface SweepPlan {
  flags: Flags<typeof FLAGS>;
  primitives: Primitive[];
  transports: TransportName[];
  memory: MemoryKind[];
  procs: number[];
  out: string;
}

/** One combination's plan, or why it is skipped. */
async function combination(
  sweep: SweepPlan,
  name: string,
  primitive: Primitive,
  transport: TransportName,
  memory: MemoryKind,
  procs: number,
): Promise<RunPlan | string> {
  const carried = TRANSPORTS[transport].memory;
  if (!carried.includes(memory)) return `${transport} carries ${carried.join(", ")} memory`;
  try {
    const plan = planRun(primitive, {
      ...sweep.flags,
      procs,
      transport,
      memory,
      csv: `${sweep.out}/${name}.csv`,
      json: `${sweep.out}/${name}.json`,
      // The sweep's --max is a ceiling each combination may lower to fit.
      given: new Set(["transport", "procs"]),
    });
    await checkDevice(plan);
    return plan;
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    return e.message;
  }
}

const SWEEP: Task<SweepPlan, typeof FLAGS> = {
  name: "sweep",
  summary: "Measures every combination into one CSV each.",
  flags: FLAGS,
  plan(flags) {
    const plan: SweepPlan = {
      flags,
      primitives: flags.primitives.map((p) => primitiveNamed(p)!),
      transports: flags.transports,
      memory: flags.memory,
      procs: [...new Set(flags.procs)],
      out: writableFolder("out", flags.out),
    };
    // Validate the shared flags (and the kept limits) once, on a combination the sweep runs.
    const [first] = plan.transports;
    boundsOf(planRun("allreduce", {
      ...flags,
      procs: 2,
      transport: first,
      memory: TRANSPORTS[first].bestMemory,
    }));
    return plan;
  },
  async run(sweep, signal, argv) {
    Deno.mkdirSync(sweep.out, { recursive: true });
    const indexPath = `${sweep.out}/index.csv`;
    // The index is replaced (atomically) with every line so far as each cell ends.
    const lines: (string | number)[][] = [INDEX_COLUMNS];
    const index = (cells: (string | number)[]) => {
      lines.push(cells);
      writeAtomically(indexPath, stringify(lines));
    };
    writeAtomically(indexPath, stringify(lines));
    const machine = await collectMetadata(argv, {});
    let failed = 0;
    const measured: string[] = [];
    const failures: FailedRun[] = [];
    const cells = sweep.primitives.length * sweep.transports.length * sweep.memory.length *
      sweep.procs.length;
    const started = performance.now();
    let cell = 0;
    for (const primitive of sweep.primitives) {
      for (const transport of sweep.transports) {
        for (const memory of sweep.memory) {
          for (const procs of sweep.procs) {
            cell++;
            const name = `${cliName(primitive)}-${transport}-${memory}-${procs}`;
            const axes = [cliName(primitive), transport, memory, procs];
            const plan = await combination(sweep, name, primitive, transport, memory, procs);
            if (typeof plan === "string") {
              console.log(`skip ${name}: ${plan}`);
              index([...axes, "skipped", 0, 0, "", plan]);
              continue;
            }
            const metadata = { ...machine, options: { ...plan.sweep, procs } };
            const began = performance.now();
            try {
              const summary = await runPlan(plan, { table: false, metadata, signal });
              const seconds = ((performance.now() - began) / 1000).toFixed(1);
              const status = summary.wrong > 0 ? "wrong" : "ok";
              if (summary.wrong > 0) failed++;
              const eta = cell < cells ? timeLeft(performance.now() - started, cell / cells) : "";
              console.log(
                `${status.padEnd(5)} ${name}: ${summary.rows} sizes, ${summary.wrong} wrong, ` +
                  `${seconds} s → ${plan.csv} (${cell}/${cells}${eta ? `, ${eta}` : ""})`,
              );
              index([...axes, status, summary.rows, summary.wrong, plan.csv!, ""]);
              measured.push(plan.csv!);
            } catch (e) {
              // After Ctrl-C, whatever failed failed because of it.
              const why = signal.aborted ? signal.reason : e;
              const interrupted = why instanceof Interrupted;
              const code = stoppedBy(`dccl sweep ${name}`, why, stoppedRun(plan, interrupted));
              index([...axes, "failed", 0, 0, plan.csv!, String(why)]);
              if (interrupted) return code;
              failures.push({ name, reason: firstLine(why) });
              failed++;
            }
          }
        }
      }
    }
    console.log(`index: ${indexPath}`);
    if (measured.length > 0 || failures.length > 0) {
      const { svg, html } = await drawSweep(measured, failures, sweep.out);
      console.log(`chart: ${svg}\nreport: ${html}`);
    }
    return failed > 0 ? 1 : 0;
  },
};

/**
 * The sweep's own chart and report beside its CSVs (`chart.svg`, `report.html`), drawn by the
 * same code as `deno task compare` over every CSV it measured, with the combinations that failed.
 */
async function drawSweep(
  csvs: string[],
  failures: FailedRun[],
  out: string,
): Promise<{ svg: string; html: string }> {
  const set = new CurveSet();
  for (const csv of csvs) for await (const point of readResultsFile(csv)) set.add(point);
  const curves = set.curves();
  const svg = await renderSvg(curves);
  const html = renderHtml(
    svg,
    crossovers(curves),
    csvs,
    DEFAULT_TOLERANCE,
    wrongResults(curves),
    failures,
  );
  const paths = { svg: `${out}/chart.svg`, html: `${out}/report.html` };
  writeTogether([[paths.svg, () => svg], [paths.html, () => html]]);
  return paths;
}

/** An error's first line, for the report. */
function firstLine(e: unknown): string {
  return String(e instanceof Error ? `${e.name}: ${e.message}` : e).split("\n")[0];
}

Deno.exit(await taskMain(SWEEP, Deno.args));
