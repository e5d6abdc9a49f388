/**
 * `deno task browser <task> [flags]`: a primitive's benchmark (`allreduce`, `bcast`, …) or `train`
 * run inside headless Chromium, with the task's own flags; its table printed here as the CLI
 * prints it, its CSV and JSON written here (docs/browser.md). Chromium missing: one line naming
 * the Debian package.
 * @module
 */

import { cliName, type Primitive, PRIMITIVE_LIST, PRIMITIVES } from "../bench/cases.ts";
import { WEB_TRANSPORTS } from "../internal.ts";
import { joiningTabs, limitsInTab, sweepInTab, trainInTab } from "./browser/tab_run.ts";
import { limitsTable } from "../bench/limits/limits_table.ts";
import { chromiumAvailable, ChromiumMissing } from "./browser/chromium.ts";
import { describe, runBenchmark, stoppedRun } from "./bench/benchmark.ts";
import { BENCHMARK_FLAGS, planRun, type RunPlan } from "./bench/benchmark_plan.ts";
import { type Flags, UsageError } from "./common/flags.ts";
import { describeTraining, planTraining, type TrainPlan } from "./train/training_plan.ts";
import { runTraining } from "./train/training.ts";
import { collectMetadata } from "./common/metadata.ts";
import { TRAIN_FLAGS } from "./train/training_flags.ts";
import { LAUNCH_FLAGS } from "./common/launcher.ts";
import { type Task, taskMain } from "./common/task.ts";

/** The sweep's largest buffer in a tab unless `--max` says: a tab's heaps share one renderer. */
const TAB_MAX = "16M";

/** `flags` with the tab's largest buffer, unless given (point-to-point tests keep OSU's 4 MiB). */
function withTabMax(primitive: Primitive, flags: Flags<typeof BENCHMARK_FLAGS>) {
  return flags.given.has("max") || PRIMITIVES[primitive].flow ? flags : { ...flags, max: TAB_MAX };
}

/**
 * Refuses, before anything is planned from them, the flags a tab cannot honour: ranks in a tab
 * are its own workers, so neither an external launcher, nor processes of threads, nor progress
 * threads (not built for a tab's ranks).
 */
function tabLaunch(flags: Flags<typeof LAUNCH_FLAGS>): void {
  for (const flag of ["launcher", "threads", "progress"] as const) {
    if (flags[flag] !== LAUNCH_FLAGS[flag].default) {
      throw new UsageError(
        `--${flag} ${flags[flag]} is not accepted in a browser tab: its ranks are the tab's ` +
          `own workers (or logical ranks on its GPU)`,
      );
    }
  }
}

/** The transport of a run in a tab: one whose ranks a web page can start. */
function webTransport(transport: string) {
  if (!WEB_TRANSPORTS.has(transport)) {
    throw new UsageError(
      `--transport ${transport} is not accepted in a browser tab: expected ${
        WEB_TRANSPORTS.names.join(", ")
      } (a tab's workers or its GPU)`,
    );
  }
  return transport;
}

/** A UsageError (exit 2: a missing tool) when Chromium cannot be started here. */
async function requireChromium(): Promise<void> {
  if (!(await chromiumAvailable())) throw new UsageError(new ChromiumMissing().message);
}

const TAB_HEADER =
  "in headless Chromium: ranks are the tab's workers (or logical ranks on its GPU)";

/** `deno task browser <primitive>`. */
function benchmarkInTab(primitive: Primitive): Task<RunPlan, typeof BENCHMARK_FLAGS> {
  return {
    name: `browser ${cliName(primitive)}`,
    synopsis: `browser ${cliName(primitive)}`,
    summary: `Measures ${cliName(primitive)} over a size sweep inside headless Chromium.`,
    flags: BENCHMARK_FLAGS,
    async plan(flags) {
      // With --tabs, tabs join Deno processes: the CLI's own run, with headless tabs on its link.
      const joining = flags.tabs > 0;
      if (!joining) tabLaunch(flags);
      const plan = planRun(primitive, withTabMax(primitive, flags));
      if (!joining) webTransport(plan.transport);
      await requireChromium();
      return plan;
    },
    notes: (plan) => plan.notes,
    async run(plan, signal, argv) {
      if (plan.tabs > 0) {
        const tabs = joiningTabs(plan.tabs);
        try {
          return await runBenchmark(
            plan,
            signal,
            ["browser", cliName(primitive), ...argv],
            tabs.onJoinLink,
          );
        } finally {
          await tabs.close();
        }
      }
      const transport = webTransport(plan.transport);
      const wrong = await sweepInTab({
        sweep: plan.sweep,
        procs: plan.procs,
        transport,
        gpu: plan.device,
        timeoutMs: plan.timeoutMs,
        header: [...describe(plan), TAB_HEADER],
        csv: plan.csv,
        json: plan.json,
        command: ["deno", "task", "browser", cliName(primitive), ...argv],
      }, signal);
      if (wrong === 0) return 0;
      console.error(
        `dccl browser ${cliName(primitive)}: ${wrong} wrong elements; see the wrong column`,
      );
      return 1;
    },
    stopped: stoppedRun,
  };
}

/** `deno task browser train`. */
const TRAIN_IN_TAB: Task<TrainPlan, typeof TRAIN_FLAGS> = {
  name: "browser train",
  synopsis: "browser train",
  summary: "Trains the MNIST MLP on a browser tab's workers, inside headless Chromium.",
  flags: TRAIN_FLAGS,
  async plan(flags) {
    // With --tabs, tabs join Deno processes: the CLI's own run, with headless tabs on its link.
    const joining = flags.tabs > 0;
    if (!joining) tabLaunch(flags);
    const plan = await planTraining(flags);
    if (!joining) {
      webTransport(plan.config.transport);
      if (plan.config.checkpoint || plan.maxRestarts > 0) {
        throw new UsageError("--checkpoint and --max-restarts are not accepted in a browser tab");
      }
    }
    await requireChromium();
    return plan;
  },
  async run(plan, signal, argv) {
    if (plan.tabs > 0) {
      const tabs = joiningTabs(plan.tabs);
      const { mnist: _, ...options } = plan;
      const command = ["browser", "train", ...argv];
      const metadata = await collectMetadata(command, { ...options.config, csv: plan.csv });
      try {
        await runTraining(plan, { metadata, signal, onJoinLink: tabs.onJoinLink });
      } finally {
        await tabs.close();
      }
      return 0;
    }
    const transport = webTransport(plan.config.transport);
    await trainInTab({
      config: { ...plan.config, transport },
      report: {
        header: [...describeTraining(plan), TAB_HEADER],
        csv: plan.csv,
        json: plan.json,
        metadata: { command: ["deno", "task", "browser", "train", ...argv] },
      },
    }, signal);
    return 0;
  },
};

/** `deno task browser limits`: the tab's limits, kept for the runs in tabs that follow. */
const LIMITS_IN_TAB: Task<Record<never, never>> = {
  name: "browser limits",
  synopsis: "browser limits",
  summary: "Measures a tab's limits inside headless Chromium and keeps them for later runs.",
  flags: {},
  async plan() {
    await requireChromium();
    return {};
  },
  async run(_, signal) {
    const { limits, kept } = await limitsInTab(signal);
    console.error(`dccl browser limits: kept at ${kept}`);
    console.log(limitsTable(limits));
    return 0;
  },
};

const [task, ...rest] = Deno.args;
const tasks = [...PRIMITIVE_LIST.map(cliName), "train", "limits"];
const primitive = task === undefined ? undefined : PRIMITIVE_LIST.find((p) => cliName(p) === task);
if (task !== "train" && task !== "limits" && primitive === undefined) {
  console.error(
    `dccl browser: ${task === undefined ? "no task given" : `unknown task ${task}`}: expected ` +
      `${tasks.join(", ")} (deno task browser allreduce --procs 4 --transport shm)`,
  );
  Deno.exit(2);
}
Deno.exit(
  await (primitive !== undefined
    ? taskMain(benchmarkInTab(primitive), rest)
    : task === "limits"
    ? taskMain(LIMITS_IN_TAB, rest)
    : taskMain(TRAIN_IN_TAB, rest)),
);
