/**
 * `deno task train-study <study> [flags]`: the seed studies, each a series of training runs that
 * writes `<out>/<study>.csv`, `.json`, `.svg` and `.html` and prints its table.
 *
 * - `speedup`: 1, 2, 4, 8 ranks × shm (threads) and ws (processes) at a global batch of 64:
 *   time, speedup T1/Tp, efficiency, Karp–Flatt serial fraction, and an Amdahl fit per transport.
 * - `sync-every`: local-sgd averaging every K ∈ {1, 8, 64, 512, epoch} batches × 2, 4, 8 ranks.
 * - `strategies`: allreduce, local-sgd (K = 8), ps sync and ps async at 2 and 4 ranks, on the
 *   CPU and (on a hardware adapter) the GPU.
 * - `batch`: batch 16 and 512 on the CPU and the GPU: the training run, and the per-batch
 *   breakdown into upload, kernels and download.
 * - `memory`: one run with host, shared and managed slabs (and gpu slabs on a hardware adapter).
 * @module
 */

import { stringify } from "csv-stringify/sync";
import type { TopLevelSpec } from "vega-lite";
import { htmlPage, htmlTable, specToSvg } from "../bench/compare/chart.ts";
import { startGroup } from "../primitives/launch/launch.ts";
import { gpuUnavailable } from "../primitives/memory/gpu_device.ts";
import type { Breakdown, BreakdownArgs } from "../trainer/breakdown.ts";
import type { Mnist } from "../trainer/mnist.ts";
import type { TrainSummary } from "../trainer/report.ts";
import { interruptible } from "./_benchmark.ts";
import {
  type FlagSpec,
  integer,
  oneOf,
  parseFlags,
  usage,
  UsageError,
  userPath,
  writableFolder,
} from "./_flags.ts";
import { collectMetadata } from "./_metadata.ts";
import { planTraining, readData, runTraining, summaryOf, TRAIN_FLAGS } from "./_training.ts";

const STUDIES = ["speedup", "sync-every", "batch", "strategies", "memory"] as const;
type StudyName = typeof STUDIES[number];

const FLAGS: Record<string, FlagSpec> = {
  epochs: { help: "epochs of every run", default: "10" },
  out: { help: "folder for the CSV, JSON, SVG and HTML", default: "out/train-study" },
  data: TRAIN_FLAGS.data,
  "train-samples": TRAIN_FLAGS["train-samples"],
  "test-samples": TRAIN_FLAGS["test-samples"],
  gpu: {
    help: "include GPU runs: auto (on a hardware adapter; a software one takes minutes per " +
      "epoch), yes or no",
    default: "auto",
  },
  timeout: TRAIN_FLAGS.timeout,
};

/** A row of a study's table: column → value. */
type Row = Record<string, string | number>;

/** What a study produces. */
interface StudyResult {
  rows: Row[];
  /** Lines printed under the table (fits, notes). */
  notes: string[];
  chart: TopLevelSpec;
}

/** What studies share: the data, the common flags, and one training run. */
interface StudyContext {
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
}

const round = (x: number, digits = 3) => Number(x.toFixed(digits));
const pct = (x: number) => round(100 * x, 2);

async function speedup(ctx: StudyContext): Promise<StudyResult> {
  const rows: Row[] = [];
  const notes: string[] = [];
  for (const transport of ["shm", "ws"]) {
    const times: [number, number][] = [];
    for (const procs of [1, 2, 4, 8]) {
      const s = await ctx.train(
        { transport, procs: String(procs) },
        `${transport}, ${procs} ranks`,
      );
      times.push([procs, s.train_s]);
      const t1 = times[0][1], sp = t1 / s.train_s;
      rows.push({
        transport,
        launch: transport === "shm" ? "threads (workers)" : "processes",
        procs,
        time_s: round(s.train_s, 2),
        speedup: round(sp, 2),
        efficiency: round(sp / procs, 2),
        karp_flatt: procs > 1 ? round((1 / sp - 1 / procs) / (1 - 1 / procs), 3) : "",
        test_acc_pct: pct(s.final_test_acc),
      });
    }
    // Amdahl: T(p)/T1 = f + (1 − f)/p, least squares in f over p > 1.
    const t1 = times[0][1];
    const fit = times.slice(1).map(([p, t]) => [1 - 1 / p, t / t1 - 1 / p]);
    const f = fit.reduce((s, [x, y]) => s + x * y, 0) / fit.reduce((s, [x]) => s + x * x, 0);
    notes.push(
      `${transport}: Amdahl fit serial fraction ${round(f, 3)} (max speedup ${
        f > 0 ? round(1 / f, 1) : "∞"
      }×)`,
    );
  }
  return {
    rows,
    notes,
    chart: lineChart(rows, "procs", "speedup", "transport", "ranks", "speedup T1/Tp"),
  };
}

async function syncEvery(ctx: StudyContext): Promise<StudyResult> {
  const rows: Row[] = [];
  for (const procs of [2, 4, 8]) {
    for (const every of ["1", "8", "64", "512", "epoch"]) {
      const s = await ctx.train(
        { procs: String(procs), sync: "local-sgd", "sync-every": every },
        `local-sgd every ${every}, ${procs} ranks`,
      );
      rows.push({
        procs,
        sync_every: every,
        time_s: round(s.train_s, 2),
        comm_s: round(s.epochs.reduce((t, e) => t + e.comm_s, 0), 2),
        test_acc_pct: pct(s.final_test_acc),
      });
    }
  }
  return {
    rows,
    notes: ["local-sgd: each rank steps on its shard; parameters averaged every K batches"],
    chart: {
      $schema: "https://vega.github.io/schema/vega-lite/v6.json",
      data: { values: rows.map((r) => ({ ...r, procs: `${r.procs} ranks` })) },
      hconcat: (["time_s", "test_acc_pct"] as const).map((y) => ({
        width: 320,
        height: 240,
        mark: { type: "line", point: true },
        encoding: {
          x: { field: "sync_every", type: "ordinal", sort: null, title: "average every K batches" },
          y: {
            field: y,
            type: "quantitative",
            scale: { zero: false },
            title: y === "time_s" ? "time (s)" : "test accuracy (%)",
          },
          color: { field: "procs", type: "nominal", title: null },
        },
      })),
    },
  };
}

async function strategies(ctx: StudyContext): Promise<StudyResult> {
  const rows: Row[] = [];
  const notes: string[] = [];
  const kinds: [string, Record<string, string>][] = [
    ["allreduce", { sync: "allreduce" }],
    ["local-sgd (K=8)", { sync: "local-sgd", "sync-every": "8" }],
    ["ps sync", { sync: "ps" }],
    ["ps async", { sync: "ps", "ps-mode": "async" }],
  ];
  const devices = ctx.noGpu ? ["cpu"] : ["cpu", "gpu"];
  if (ctx.noGpu) notes.push(`gpu runs left out: ${ctx.noGpu}`);
  for (const device of devices) {
    for (const procs of [2, 4]) {
      for (const [name, flags] of kinds) {
        // GPU ranks are logical ranks on the one device (the gpu transport).
        const where: Record<string, string> = device === "gpu" ? { device, transport: "gpu" } : {};
        const s = await ctx.train(
          { ...flags, ...where, procs: String(procs) },
          `${name}, ${procs} ranks, ${device}`,
        );
        const last = s.epochs.at(-1)!;
        rows.push({
          device,
          procs,
          strategy: name,
          time_s: round(s.train_s, 2),
          comm_s: round(s.epochs.reduce((t, e) => t + e.comm_s, 0), 2),
          test_acc_pct: pct(s.final_test_acc),
          staleness_mean: last.staleness_mean === undefined ? "" : round(last.staleness_mean, 2),
        });
      }
    }
  }
  notes.push("ps: rank 0 serves, the other ranks compute (so 2 ranks train on one worker)");
  return {
    rows,
    notes,
    chart: barChart(rows, "strategy", "time_s", "procs", "device", "time (s)"),
  };
}

async function batchStudy(ctx: StudyContext): Promise<StudyResult> {
  const rows: Row[] = [];
  const notes: string[] = [];
  const devices = ctx.noGpu ? ["cpu"] : ["cpu", "gpu"];
  if (ctx.noGpu) notes.push(`gpu runs left out: ${ctx.noGpu}`);
  for (const device of devices) {
    for (const batch of ["16", "512"]) {
      const flags: Record<string, string> = { device, batch, procs: "1" };
      if (device === "gpu") flags.transport = "gpu";
      const label = `${device}, batch ${batch}`;
      const s = await ctx.train(flags, label);
      const b = await ctx.breakdown(flags, `${label} breakdown`);
      rows.push({
        device,
        batch: Number(batch),
        time_s: round(s.train_s, 2),
        test_acc_pct: pct(s.final_test_acc),
        upload_ms: round(b.upload_ms, 4),
        kernels_ms: round(b.kernels_ms, 4),
        download_ms: round(b.download_ms, 3),
        samples_per_s: Math.round(Number(batch) / (b.upload_ms + b.kernels_ms) * 1000),
      });
    }
  }
  notes.push(
    "per batch: upload = gather + hand to the device (the CPU: gather only); kernels = step + " +
      "update; download = one read of the scores (training reads them once per epoch)",
  );
  const parts = rows.flatMap((r) =>
    (["upload_ms", "kernels_ms"] as const).map((phase) => ({
      run: `${r.device}, batch ${r.batch}`,
      phase: phase.replace("_ms", ""),
      ms_per_sample: Number(r[phase]) / Number(r.batch),
    }))
  );
  return {
    rows,
    notes,
    chart: {
      $schema: "https://vega.github.io/schema/vega-lite/v6.json",
      data: { values: parts },
      width: 360,
      height: 240,
      mark: "bar",
      encoding: {
        x: { field: "run", type: "nominal", title: null },
        y: { field: "ms_per_sample", type: "quantitative", title: "ms per sample" },
        color: { field: "phase", type: "nominal", title: null },
      },
    },
  };
}

async function memory(ctx: StudyContext): Promise<StudyResult> {
  const rows: Row[] = [];
  const notes: string[] = [];
  const kinds = ["host", "shared"];
  if (ctx.noAdapter) notes.push(`managed slabs left out: ${ctx.noAdapter}`);
  else kinds.push("managed");
  if (ctx.noGpu) notes.push(`gpu slabs left out: ${ctx.noGpu}`);
  else kinds.push("gpu");
  let shared = 0;
  const results: [string, TrainSummary][] = [];
  for (const kind of kinds) {
    const s = await ctx.train({ memory: kind }, `${kind} slabs`);
    results.push([kind, s]);
    if (kind === "shared") shared = s.train_s;
  }
  for (const [kind, s] of results) {
    rows.push({
      memory: kind,
      time_s: round(s.train_s, 2),
      comm_s: round(s.epochs.reduce((t, e) => t + e.comm_s, 0), 2),
      relative_speed: round(shared / s.train_s, 2),
      test_acc_pct: pct(s.final_test_acc),
    });
  }
  notes.push("2 ranks on shm; the model computes in the heap, copies to and from other kinds");
  return {
    rows,
    notes,
    chart: barChart(rows, "memory", "time_s", "memory", undefined, "time (s)"),
  };
}

function lineChart(
  rows: Row[],
  x: string,
  y: string,
  color: string,
  xTitle: string,
  yTitle: string,
): TopLevelSpec {
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    data: { values: rows },
    width: 420,
    height: 280,
    mark: { type: "line", point: true },
    encoding: {
      x: { field: x, type: "quantitative", title: xTitle },
      y: { field: y, type: "quantitative", title: yTitle },
      color: { field: color, type: "nominal", title: null },
    },
  };
}

function barChart(
  rows: Row[],
  x: string,
  y: string,
  color: string,
  facet: string | undefined,
  yTitle: string,
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
  const $schema = "https://vega.github.io/schema/vega-lite/v6.json";
  return facet
    ? { $schema, data: { values: rows }, facet: { field: facet, type: "nominal" }, spec }
    : { $schema, data: { values: rows }, ...spec };
}

const RUNNERS: Record<StudyName, (ctx: StudyContext) => Promise<StudyResult>> = {
  "speedup": speedup,
  "sync-every": syncEvery,
  "batch": batchStudy,
  "strategies": strategies,
  "memory": memory,
};

/** Why GPU runs are left out under `--gpu`, or undefined when they run. */
async function gpuVerdict(mode: string): Promise<string | undefined> {
  if (mode === "no") return "--gpu no";
  const why = await gpuUnavailable();
  if (why) {
    if (mode === "yes") throw new UsageError(`--gpu yes needs a WebGPU device, and ${why}`);
    return why;
  }
  if (mode === "yes") return undefined;
  const adapter = await navigator.gpu.requestAdapter();
  const info = adapter?.info as { isFallbackAdapter?: boolean; description?: string } | undefined;
  return info?.isFallbackAdapter
    ? `the adapter is a software one (${info.description}); --gpu yes runs them anyway`
    : undefined;
}

/** The table as aligned text. */
export function formatTable(rows: Row[]): string {
  const columns = Object.keys(rows[0] ?? {});
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c]).length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padStart(widths[i])).join("  ");
  return [line(columns), ...rows.map((r) => line(columns.map((c) => String(r[c]))))].join("\n");
}

async function main(argv: string[]): Promise<number> {
  const command = "dccl train-study";
  const positionals: string[] = [];
  let study: StudyName, values: Record<string, string | undefined>, mnist: Mnist;
  let noGpu: string | undefined, noAdapter: string | undefined, out: string;
  try {
    values = parseFlags(FLAGS, argv, positionals);
    if (values.help) {
      console.log(
        usage(
          `train-study <${STUDIES.join("|")}>`,
          "Runs one of the trainer studies (CSV, JSON, SVG, HTML and a table).",
          FLAGS,
        ),
      );
      return 0;
    }
    if (positionals.length !== 1) {
      throw new UsageError(`name one study: ${STUDIES.join(", ")}`);
    }
    study = oneOf("study", positionals[0], STUDIES);
    integer("epochs", values.epochs!, 1, 100_000);
    out = writableFolder("out", userPath(values.out!));
    noGpu = await gpuVerdict(oneOf("gpu", values.gpu!, ["auto", "yes", "no"]));
    noAdapter = await gpuUnavailable();
    mnist = await readData(values.data === undefined ? undefined : userPath(values.data));
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    console.error(`${command}: ${e.message}`);
    return 2;
  }
  const common: Record<string, string> = { epochs: values.epochs!, timeout: values.timeout! };
  for (const flag of ["train-samples", "test-samples"]) {
    if (values[flag] !== undefined) common[flag] = values[flag]!;
  }
  const metadata = await collectMetadata(argv, { study, ...common });
  let runs = 0;
  const planned = async (flags: Record<string, string>) => {
    const argv = Object.entries({ ...common, ...flags }).map(([k, v]) => `--${k}=${v}`);
    return await planTraining(parseFlags(TRAIN_FLAGS, argv), mnist);
  };
  const ctx: StudyContext = {
    mnist,
    epochs: values.epochs!,
    noGpu,
    noAdapter,
    async train(flags, label) {
      const plan = await planned(flags);
      const s = summaryOf(
        await interruptible((signal) => runTraining(plan, { metadata, print: false, signal })),
      );
      console.error(
        `[${++runs}] ${study}: ${label}: ${s.train_s.toFixed(2)} s, test accuracy ` +
          `${(100 * s.final_test_acc).toFixed(2)}%`,
      );
      return s;
    },
    async breakdown(flags, label) {
      const plan = await planned(flags);
      const args: BreakdownArgs = {
        config: plan.config,
        mnist: plan.mnist,
        dataDir: plan.mnist.dir,
        steps: 200,
      };
      const [b] = await startGroup<Breakdown>(new URL("../trainer/breakdown.ts", import.meta.url), {
        size: 1,
        transport: plan.config.transport,
        args,
        gpu: plan.config.device === "gpu",
        timeoutMs: plan.config.timeoutMs,
      }).results;
      console.error(
        `[${++runs}] ${study}: ${label}: upload ${b.upload_ms.toFixed(3)} ms, kernels ` +
          `${b.kernels_ms.toFixed(3)} ms, download ${b.download_ms.toFixed(3)} ms per batch`,
      );
      return b;
    },
  };
  let result: StudyResult;
  try {
    result = await RUNNERS[study](ctx);
  } catch (e) {
    if (e instanceof UsageError) {
      console.error(`${command}: ${e.message}`);
      return 2;
    }
    console.error(`${command}: ${e instanceof Error ? e.message.split("\n")[0] : e}`);
    return 1;
  }
  await Deno.mkdir(out, { recursive: true });
  const base = `${out}/${study}`;
  const columns = Object.keys(result.rows[0]);
  await Deno.writeTextFile(
    `${base}.csv`,
    stringify([columns, ...result.rows.map((r) => columns.map((c) => r[c]))]),
  );
  await Deno.writeTextFile(
    `${base}.json`,
    JSON.stringify({ metadata, study, rows: result.rows, notes: result.notes }, null, 1),
  );
  const svg = await specToSvg(result.chart);
  await Deno.writeTextFile(`${base}.svg`, svg);
  await Deno.writeTextFile(
    `${base}.html`,
    htmlPage(
      `dccl train-study ${study}`,
      `${svg}\n${htmlTable(columns, result.rows.map((r) => columns.map((c) => r[c])))}\n` +
        result.notes.map((n) => `<p>${n}</p>`).join("\n"),
    ),
  );
  console.log(`# dccl train-study ${study}: ${values.epochs} epochs per run`);
  console.log(formatTable(result.rows));
  for (const note of result.notes) console.log(`# ${note}`);
  console.log(`# wrote ${base}.csv, .json, .svg, .html`);
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
