/// <reference lib="dom" />
/**
 * The page (web/index.html): a benchmark whose table and chart fill in as the sweep runs, with the
 * CSV and JSON in the CLI's schema to download; the trainer on the tab's workers with its loss and
 * accuracy drawn as it trains; and a results page that compares dropped CSVs as `deno task
 * compare` does. It also offers `globalThis.dccl` to `deno task browser`, which drives it over the
 * DevTools protocol.
 * @module
 */

import { stringify } from "csv-stringify/browser/esm/sync";
import {
  CSV_HEADER,
  csvValues,
  sidecar,
  spreadLines,
  tableLayout,
} from "../../bench/report_format.ts";
import type { SizeResult } from "../../bench/harness.ts";
import { type Point, pointOfRow, readResults } from "../../bench/compare/results.ts";
import {
  crossovers,
  formatCrossovers,
  toCurves,
  wrongResults,
} from "../../bench/compare/crossover.ts";
import { renderSvg, specToSvg } from "../../bench/compare/chart.ts";
import { PRIMITIVES } from "../../bench/cases.ts";
import { type GpuSplit, gpuSplit } from "../../bench/gpu_split.ts";
import { GpuDevice } from "../../internal.ts";
import { WEB_TRANSPORTS } from "../../internal.ts";
import { type WebTransportName } from "../../core.ts";
import { DTYPES, REDUCE_OPS } from "../../internal.ts";
import { fetchMnist } from "../served_mnist.ts";
import type { TrainConfig } from "../../trainer/config.ts";
import { type EpochRow, epochsName, type TrainSummary } from "../../trainer/epochs.ts";
import {
  adapterName,
  limits,
  type TabEnvironment,
  tabEnvironment,
  tabMetadata,
} from "../environment.ts";
import {
  formAlgorithms,
  formMemories,
  maxTabRanks,
  planFormSweep,
  planTraining,
} from "../forms.ts";
import {
  pageBundle,
  runGroup,
  runSweep,
  runTraining,
  type SweepOutcome,
  type SweepRequest,
} from "../runs.ts";
import { measureTabLimits } from "../tab_limits.ts";
import { type MachineLimits, sweepBounds } from "../../bench/limits/machine_limits.ts";
import { limitsTable } from "../../bench/limits/limits_table.ts";

const byId = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const say = (id: string, text: string) => byId(id).textContent = text;

type Forwarded = "dcclSweep" | "dcclTrain";
/** Messages handed to each binding so far (see {@linkcode forward}). */
const forwarded: Record<Forwarded, number> = { dcclSweep: 0, dcclTrain: 0 };

/**
 * Hands `message` to the DevTools binding `name` where `deno task browser` set one up (it writes
 * the table and files as the CLI does), counting it: a binding's calls can reach the driver after
 * the answer of the run that made them, so it waits for as many as were sent.
 */
function forward(name: Forwarded, message: unknown): void {
  const binding = (globalThis as Record<string, unknown>)[name];
  if (typeof binding !== "function") return;
  binding(JSON.stringify(message));
  forwarded[name]++;
}

/** The values of `form`'s fields (unchecked boxes as "false"). */
function valuesOf(form: HTMLFormElement): Record<string, string> {
  const values: Record<string, string> = {};
  for (const element of Array.from(form.elements)) {
    const field = element as HTMLInputElement;
    if (!field.name) continue;
    values[field.name] = field.type === "checkbox" ? String(field.checked) : field.value;
  }
  return values;
}

/** Fills `select` with `options`, keeping its value where it is still one of them. */
function fill(select: HTMLSelectElement, options: readonly string[]): void {
  const kept = select.value;
  select.replaceChildren(...options.map((o) => new Option(o, o)));
  if (options.includes(kept)) select.value = kept;
}

/** Lets the user save `text` as `name`. */
function download(name: string, text: string, type: string): void {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([text], { type }));
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}

/** The points of a run's results, for the compare chart. */
const pointsOf = (results: SizeResult[]) => results.map((r) => pointOfRow("tab", r.row));

let environment: TabEnvironment;
let last: SweepOutcome | undefined;
/** The tab's limits, once measured: sweeps read their rows against them. */
let tabLimits: MachineLimits | undefined;

/**
 * A sweep the page runs: the tab's own metadata unless given; `live: false` draws the chart once
 * at the end instead of after every size (the drawing runs on the page's thread, a core the ranks
 * would use: `deno task browser` measures without it).
 */
type PageSweep = Omit<SweepRequest, "metadata"> & {
  metadata?: SweepRequest["metadata"];
  live?: boolean;
};

/** The chart is redrawn at most this often while a sweep runs, ms. */
const REDRAW_MS = 2000;

/** Runs a sweep, filling the table and chart as it goes. */
async function sweep(request: PageSweep): Promise<SweepOutcome> {
  const metadata = request.metadata ?? tabMetadata(environment, { ...request.sweep });
  const bounds = request.bounds !== undefined ? request.bounds : sweepBounds(tabLimits, {
    bounds: WEB_TRANSPORTS.byName[request.transport].bounds,
    primitive: request.sweep.primitive,
    procs: request.procs,
    window: request.sweep.window,
  });
  const layout = tableLayout(request.sweep.timing === "per-iter", bounds);
  const table = byId<HTMLPreElement>("table");
  table.textContent = "";
  say("chart", "");
  say("sweep-warning", "");
  const results: SizeResult[] = [];
  let drawing = Promise.resolve(), drawn = -Infinity;
  const draw = () =>
    drawing = drawing.then(async () => {
      drawn = performance.now();
      byId("chart").innerHTML = await renderSvg(toCurves(pointsOf(results)));
    });
  const outcome = await runSweep({ ...request, metadata, bounds }, {
    onStart(report) {
      forward("dcclSweep", { type: "start", report });
      table.textContent = report.header.map((l) => `# ${l}`).join("\n") + `\n${layout.title}\n`;
    },
    onRow(result) {
      forward("dcclSweep", { type: "row", result });
      results.push(result);
      table.textContent += layout.line(result.row) + "\n";
      if (request.live !== false && performance.now() - drawn > REDRAW_MS) draw();
    },
  });
  await draw();
  const rows = results.map((r) => r.row);
  if (results.length > 0) table.textContent += layout.footer(rows) + "\n";
  // The CLI's footer says it too; here it also stands out above the table.
  say("sweep-warning", spreadLines(rows).join("").replace(/^# /, ""));
  last = outcome;
  for (const id of ["download-csv", "download-json"]) byId<HTMLButtonElement>(id).disabled = false;
  return outcome;
}

/** The CSV of the last run, as the CLI writes it. */
function lastCsv(): string {
  return stringify([CSV_HEADER, ...(last?.results ?? []).map((r) => csvValues(r.row))]);
}

/** The JSON sidecar of the last run, as the CLI writes it. */
function lastJson(): string {
  const metadata = last?.report?.metadata ?? tabMetadata(environment, {});
  const results = last?.results ?? [];
  const complete = results.length === last?.report?.counts.length;
  return JSON.stringify(sidecar(metadata, results, { complete }), null, 1);
}

/** The trainer's chart: running loss by progress through the run, test accuracy by epoch. */
function trainSpec(losses: [number, number][], epochs: EpochRow[]) {
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: "training in the tab",
    hconcat: [
      {
        width: 360,
        height: 200,
        data: { values: losses.map(([x, loss]) => ({ x, loss })) },
        mark: "line" as const,
        encoding: {
          x: { field: "x", type: "quantitative" as const, title: "epochs" },
          y: { field: "loss", type: "quantitative" as const, title: "running loss" },
        },
      },
      {
        width: 200,
        height: 200,
        data: { values: epochs.map((e) => ({ epoch: e.epoch, accuracy: 100 * e.test_acc })) },
        mark: { type: "line" as const, point: true },
        encoding: {
          x: { field: "epoch", type: "ordinal" as const },
          y: {
            field: "accuracy",
            type: "quantitative" as const,
            title: "test accuracy (%)",
            scale: { zero: false },
          },
        },
      },
    ],
  };
}

/** Trains as `config` says, drawing the loss and accuracy as it goes. */
async function train(config: TrainConfig<WebTransportName>): Promise<TrainSummary> {
  say("train-status", "reading MNIST from the server …");
  const mnist = await fetchMnist();
  const losses: [number, number][] = [], epochs: EpochRow[] = [];
  let drawn = 0;
  const draw = async () => {
    drawn = performance.now();
    byId("train-chart").innerHTML = await specToSvg(trainSpec(losses, epochs));
  };
  const summary = await runTraining({ config, mnist }, {
    onProgress(epoch, step, steps, loss) {
      forward("dcclTrain", { type: "progress", epoch, step, steps, loss });
      say("train-status", `epoch ${epoch + 1}/${config.epochs}, step ${step}/${steps}`);
      if (loss !== undefined) losses.push([epoch + step / steps, loss]);
      if (performance.now() - drawn > 500) draw();
    },
    onEpoch(row) {
      forward("dcclTrain", { type: "epoch", row });
      epochs.push(row);
      draw();
    },
  });
  await draw();
  say(
    "train-status",
    `trained ${epochsName(summary.epochs.length)} in ${summary.train_s.toFixed(2)} s; ` +
      `test accuracy ${(100 * summary.final_test_acc).toFixed(2)}%`,
  );
  return summary;
}

/** Compares dropped result files as `deno task compare` does. */
async function compare(files: File[]): Promise<string> {
  const points: Point[] = [];
  for (const file of files) for await (const p of readResults(file)) points.push(p);
  const curves = toCurves(points);
  byId("results-chart").innerHTML = await renderSvg(curves);
  const text = formatCrossovers(crossovers(curves), wrongResults(curves));
  say("results-table", text);
  return text;
}

/** The transport the memory choices were last made for. */
let memoriesFor: string | undefined;

/**
 * Keeps the benchmark form's choices consistent with each other and the tab: a new transport
 * starts at its best memory kind, as the CLI does.
 */
function refreshChoices(form: HTMLFormElement): void {
  const v = valuesOf(form);
  const select = (name: string) => form.elements.namedItem(name) as HTMLSelectElement;
  const transport = v.transport as WebTransportName;
  fill(select("memory"), formMemories(transport, environment.adapter !== null));
  if (memoriesFor !== transport) {
    select("memory").value = WEB_TRANSPORTS.byName[transport].bestMemory;
  }
  memoriesFor = transport;
  const memory = select("memory").value as Parameters<typeof formAlgorithms>[2];
  const primitive = v.primitive as keyof typeof PRIMITIVES;
  fill(select("algorithm"), formAlgorithms(primitive, transport, memory));
  // Only the fields the primitive takes, as the CLI's header names only those.
  byId("root-field").hidden = !PRIMITIVES[primitive].rooted;
  byId("op-field").hidden = !PRIMITIVES[primitive].reduces;
}

/** Caps the forms' ranks at the tab's cores, saying why beside them. */
function capRanks(forms: HTMLFormElement[]): void {
  const most = maxTabRanks(environment.cores);
  for (const form of forms) {
    (form.elements.namedItem("procs") as HTMLInputElement).max = String(most);
  }
  for (const note of document.querySelectorAll(".ranks-note")) {
    note.textContent = `ranks: at most ${most}, this tab's ${environment.cores} cores ` +
      "(navigator.hardwareConcurrency): ranks wait by spinning, and more ranks than cores " +
      "would wait on each other";
  }
}

/** Measures the tab's limits and shows them; sweeps from then on are read against them. */
async function measureLimits(): Promise<MachineLimits> {
  const button = byId<HTMLButtonElement>("measure-limits");
  button.disabled = true;
  try {
    tabLimits = await measureTabLimits(environment, pageBundle().probe, (what) => {
      say("limits-status", `measuring ${what} …`);
    });
    say("limits-status", "measured: the benchmark reads its rows against them");
    const table = byId<HTMLPreElement>("limits-table");
    table.textContent = limitsTable(tabLimits);
    table.hidden = false;
    return tabLimits;
  } finally {
    button.disabled = !environment.crossOriginIsolated;
  }
}

/** Reports a run's failure in one line where the run's status goes. */
function failed(status: string, e: unknown): void {
  const error = e instanceof Error ? e : new Error(String(e));
  say(status, `${error.name}: ${error.message.split("\n")[0]}`);
}

async function main(): Promise<TabEnvironment> {
  environment = await tabEnvironment();
  const adapter = environment.adapter;
  say(
    "environment",
    `${navigator.userAgent}; ${environment.cores} cores; cross-origin isolated: ` +
      `${environment.crossOriginIsolated}; timer resolution ${environment.timerResolutionUs} µs; ` +
      `WebGPU: ${adapter ? adapterName(adapter) : "none"}`,
  );
  say("limits", limits(environment).join(" "));
  const form = byId<HTMLFormElement>("sweep-form");
  const select = (name: string) => form.elements.namedItem(name) as HTMLSelectElement;
  fill(select("primitive"), Object.keys(PRIMITIVES));
  select("primitive").value = "allreduce";
  fill(
    select("transport"),
    WEB_TRANSPORTS.names.filter((t) => adapter || !WEB_TRANSPORTS.byName[t].needsDevice),
  );
  fill(select("dtype"), DTYPES);
  fill(select("op"), REDUCE_OPS);
  refreshChoices(form);
  form.addEventListener("change", () => refreshChoices(form));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const planned = planFormSweep(valuesOf(form), {
        adapter: adapter !== null,
        cores: environment.cores,
      });
      say("sweep-status", "running …");
      const outcome = await sweep(planned);
      say("sweep-status", `done: ${outcome.results.length} sizes, ${outcome.wrong} wrong elements`);
    } catch (e) {
      failed("sweep-status", e);
    }
  });
  byId("download-csv").addEventListener("click", () => download("dccl.csv", lastCsv(), "text/csv"));
  byId("download-json").addEventListener(
    "click",
    () => download("dccl.json", lastJson(), "application/json"),
  );
  const trainForm = byId<HTMLFormElement>("train-form");
  capRanks([form, trainForm]);
  trainForm.addEventListener("submit", (e) => {
    e.preventDefault();
    try {
      train(planTraining(valuesOf(trainForm), environment.cores))
        .catch((e) => failed("train-status", e));
    } catch (e) {
      failed("train-status", e);
    }
  });
  const measure = byId<HTMLButtonElement>("measure-limits");
  measure.disabled = !environment.crossOriginIsolated;
  measure.addEventListener("click", () => {
    measureLimits().catch((e) => failed("limits-status", e));
  });
  const files = byId<HTMLInputElement>("results-files");
  files.addEventListener("change", () => {
    compare(Array.from(files.files ?? [])).catch((e) => failed("results-status", e));
  });
  const drop = byId("results-drop");
  drop.addEventListener("dragover", (e) => e.preventDefault());
  drop.addEventListener("drop", (e) => {
    e.preventDefault();
    const dropped = Array.from(e.dataTransfer?.files ?? []);
    compare(dropped).catch((err) => failed("results-status", err));
  });
  for (const button of form.querySelectorAll("button")) {
    button.disabled = !environment.crossOriginIsolated;
  }
  for (const button of trainForm.querySelectorAll("button")) {
    button.disabled = !environment.crossOriginIsolated;
  }
  return environment;
}

/** The tab's device allreduce split into upload, kernel and readback, at each of `counts`. */
async function gpuSplits(counts: number[], ranks: number): Promise<GpuSplit[]> {
  const gpu = await GpuDevice.open();
  try {
    const splits: GpuSplit[] = [];
    for (const count of counts) splits.push(await gpuSplit(gpu, { count, ranks }));
    return splits;
  } finally {
    gpu.destroy();
  }
}

/** What `deno task browser` drives. */
const dccl = {
  gpuSplits,
  ready: main(),
  limits: measureLimits,
  sweep,
  train,
  compare,
  group: runGroup,
  csv: lastCsv,
  json: lastJson,
  /** Messages handed to binding `name` so far. */
  forwarded: (name: Forwarded) => forwarded[name],
};
Object.assign(globalThis, { dccl });
