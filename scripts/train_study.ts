/**
 * `deno task train-study <study> [flags]`: the seed studies (scripts/studies/), each a series of
 * training runs that writes `<out>/<study>.csv` and `.json` as its runs finish, then `.svg` and
 * `.html`, and prints its table. Interrupted (Ctrl-C), it keeps the finished runs and exits 130.
 * @module
 */

import { launchGroup } from "../deno/mod.ts";
import { TRANSPORT_TABLE } from "../deno/mod.ts";
import { gpuUnavailable } from "../internal.ts";
import type { Breakdown, BreakdownArgs } from "../trainer/breakdown.ts";
import type { Mnist } from "../trainer/mnist.ts";
import {
  defineFlags,
  type Flags,
  oneOf,
  parseFlags,
  UsageError,
  writableFolder,
} from "./common/flags.ts";
import { collectMetadata } from "./common/metadata.ts";
import { type Task, taskMain } from "./common/task.ts";
import { planTraining, readData, runTraining, summaryOf, TRAIN_FLAGS } from "./train/training.ts";
import { batch } from "./train/studies/batch.ts";
import { matmul } from "./train/studies/matmul.ts";
import { memory } from "./train/studies/memory.ts";
import { speedup } from "./train/studies/speedup.ts";
import { strategies } from "./train/studies/strategies.ts";
import { formatTable, type Study, type StudyContext, StudyFiles } from "./train/studies/study.ts";
import { syncEvery } from "./train/studies/sync_every.ts";

/** Spread of a point's times, (max − min) / median, above which its row is flagged noisy. */
const NOISY_SPREAD_PCT = 10;

/** The 1, 5 and 15 minute load averages (Linux), or null where they cannot be read. */
function loadAverage(): number[] | null {
  try {
    return Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).map(Number);
  } catch {
    return null;
  }
}

const STUDIES: Record<string, Study> = {
  "speedup": speedup,
  "sync-every": syncEvery,
  "batch": batch,
  "strategies": strategies,
  "memory": memory,
  "matmul": matmul,
};

const FLAGS = defineFlags({
  epochs: { ...TRAIN_FLAGS.epochs, help: "epochs of every run" },
  out: { help: "folder for the CSV, JSON, SVG and HTML", default: "out/train-study", path: true },
  data: TRAIN_FLAGS.data,
  "train-samples": TRAIN_FLAGS["train-samples"],
  "test-samples": TRAIN_FLAGS["test-samples"],
  lr: TRAIN_FLAGS.lr,
  batch: {
    ...TRAIN_FLAGS.batch,
    help: "rows per batch on each computing rank of every run (default: each study's)",
  },
  gpu: {
    help: "include GPU runs: auto (on a hardware adapter; a software one takes minutes per " +
      "epoch), yes or no",
    kind: "choice",
    choices: ["auto", "yes", "no"],
    default: "auto",
  },
  timeout: TRAIN_FLAGS.timeout,
  repeat: {
    help: "runs of every point: the row holds the median run, with the runs' spread (a spread " +
      `over ${NOISY_SPREAD_PCT}% is flagged noisy)`,
    kind: "integer",
    min: 1,
    max: 1000,
    default: 1,
  },
});

/** Why GPU runs are left out under `--gpu`, or undefined when they run. */
async function gpuVerdict(mode: "auto" | "yes" | "no"): Promise<string | undefined> {
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

interface StudyPlan {
  study: string;
  flags: Flags<typeof FLAGS>;
  out: string;
  mnist: Mnist;
  /** Why GPU runs are left out, or why there is no adapter at all. */
  noGpu?: string;
  noAdapter?: string;
  /** The study's files, once it runs. */
  files?: StudyFiles;
}

const NAMES = Object.keys(STUDIES);

const TRAIN_STUDY: Task<StudyPlan, typeof FLAGS> = {
  name: "train-study",
  synopsis: `train-study <${NAMES.join("|")}>`,
  summary: "Runs one of the trainer studies (CSV, JSON, SVG, HTML and a table).",
  flags: FLAGS,
  positionals: true,
  async plan(flags, positionals) {
    if (positionals.length !== 1) throw new UsageError(`name one study: ${NAMES.join(", ")}`);
    const study = oneOf("study", positionals[0], NAMES);
    const out = writableFolder("out", flags.out);
    const noGpu = await gpuVerdict(flags.gpu);
    const noAdapter = await gpuUnavailable();
    return { study, flags, out, noGpu, noAdapter, mnist: await readData(flags.data) };
  },
  async run(plan, signal, argv) {
    const { study, flags, mnist } = plan;
    // Every run is planned from a command line, as its study writes it, with these flags first.
    const common: Record<string, string> = {};
    for (
      const flag of ["epochs", "timeout", "lr", "train-samples", "test-samples", "batch"] as const
    ) {
      if (flags[flag] !== undefined) common[flag] = String(flags[flag]);
    }
    const { repeat } = flags;
    const metadata = await collectMetadata(argv, {
      study,
      ...common,
      repeat,
      load_before: loadAverage(),
    });
    const files = plan.files = new StudyFiles(plan.out, study, metadata);
    let runs = 0;
    /** The spread of the last point's runs (percent of their median time). */
    let spread = 0;
    const planned = (flags: Record<string, string>) => {
      const argv = Object.entries({ ...common, ...flags }).map(([k, v]) => `--${k}=${v}`);
      return planTraining(parseFlags(TRAIN_FLAGS, argv), mnist);
    };
    const ctx: StudyContext = {
      mnist,
      epochs: common.epochs,
      noGpu: plan.noGpu,
      noAdapter: plan.noAdapter,
      record: (row) => {
        // Noisy is decided on the spread as the file shows it (10.04 shows 10.0: not noisy).
        const shown = Number(spread.toFixed(1));
        files.record(
          repeat === 1 ? row : {
            ...row,
            runs: repeat,
            time_spread_pct: shown,
            noisy: shown > NOISY_SPREAD_PCT ? "yes" : "",
          },
        );
      },
      async train(flags, label) {
        const plan = await planned(flags);
        const all = [];
        for (let k = 0; k < repeat; k++) {
          const s = summaryOf(await runTraining(plan, { metadata, print: false, signal }));
          console.error(
            `[${++runs}] ${study}: ${label}: ${s.train_s.toFixed(2)} s, test accuracy ` +
              `${(100 * s.final_test_acc).toFixed(2)}%`,
          );
          all.push(s);
        }
        all.sort((a, b) => a.train_s - b.train_s);
        const median = all[Math.floor((all.length - 1) / 2)];
        spread = (100 * (all.at(-1)!.train_s - all[0].train_s)) / median.train_s;
        return median;
      },
      async measure<T>(module: URL, args: unknown, options: { gpu: boolean }, label: string) {
        console.error(`[${++runs}] ${study}: ${label} …`);
        const [result] = await launchGroup<T>(module, {
          size: 1,
          transport: TRANSPORT_TABLE.launching("workers")[0],
          args,
          gpu: options.gpu,
          signal,
        }).results;
        return result;
      },
      async breakdown(flags, label) {
        const plan = await planned(flags);
        const args: BreakdownArgs = {
          config: plan.config,
          mnist: plan.mnist,
          steps: 200,
        };
        const url = new URL("../trainer/breakdown.ts", import.meta.url);
        const [b] = await launchGroup<Breakdown>(url, {
          size: 1,
          transport: plan.config.transport,
          args,
          gpu: plan.config.device === "gpu",
          timeoutMs: plan.config.timeoutMs,
          signal,
        }).results;
        console.error(
          `[${++runs}] ${study}: ${label}: upload ${b.upload_ms.toFixed(3)} ms, kernels ` +
            `${b.kernels_ms.toFixed(3)} ms, download ${b.download_ms.toFixed(3)} ms per batch`,
        );
        return b;
      },
    };
    const result = await STUDIES[study](ctx);
    metadata.options.load_after = loadAverage();
    await files.finish(result);
    // Every study trains but matmul, which times its kernels alone.
    const runsAre = study === "matmul" ? "GEMMs timed alone" : `${flags.epochs} epochs per run`;
    console.log(`# dccl train-study ${study}: ${runsAre}`);
    console.log(formatTable(files.rows));
    for (const note of result.notes) console.log(`# ${note}`);
    console.log(`# wrote ${files.base}.csv, .json, .svg, .html`);
    return 0;
  },
  stopped({ files }) {
    return files && files.rows.length > 0
      ? `; ${files.base}.csv and .json hold the ${files.rows.length} finished runs`
      : undefined;
  },
};

if (import.meta.main) Deno.exit(await taskMain(TRAIN_STUDY, Deno.args));
