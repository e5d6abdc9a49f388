/**
 * One primitive's benchmark as a task (`deno task allreduce …`): its plan (benchmark_plan.ts)
 * run by ranks running the harness, every rank counting wrong elements. `sweep` runs each
 * combination it measures with {@linkcode runPlan}.
 * @module
 */

import type { HarnessArgs, HarnessSummary } from "../../bench/sweep_rank.ts";
import { run as runHarness } from "./cli_sweep_rank.ts";
import { cliName, type Primitive, PRIMITIVES } from "../../bench/cases.ts";
import { describeSweep } from "../../bench/sweep_plan.ts";
import type { RunMetadata } from "../../bench/report_format.ts";
import { joinFromEnv, launchFromEnv } from "../../deno/mod.ts";
import { launchGroup } from "../../deno/mod.ts";
import { launchMixedGroup, printJoinLink } from "../browser/mixed_group.ts";
import { SWEEP_PROGRAM } from "../../web/tab_task.ts";
import { TRANSPORTS } from "../../deno/mod.ts";
import { type RunBounds, sweepBounds } from "../../bench/limits/machine_limits.ts";
import { keptLimits, LimitsFileError } from "../limits/this_machine.ts";
import { BENCHMARK_FLAGS, planRun, type RunPlan } from "./benchmark_plan.ts";
import { describeModel } from "../../internal.ts";
import { UsageError } from "../common/flags.ts";
import { translateHabits } from "../common/foreign_flags.ts";
import { collectMetadata } from "../common/metadata.ts";
import { requireDevice, type Task, taskMain } from "../common/task.ts";

/** The lines above the table: what ran, how it was timed, and the units. */
export function describe(plan: RunPlan): string[] {
  const lines = describeSweep(plan.sweep, { ...plan, transport: TRANSPORTS[plan.transport] });
  return plan.model ? [lines[0], describeModel(plan.model), ...lines.slice(1)] : lines;
}

/** Output choices of {@linkcode runPlan}. */
export interface RunOutput {
  table: boolean;
  metadata: RunMetadata;
  signal?: AbortSignal;
  /** With tabs: told the join link (`deno task browser` opens tabs on it). @default {printed} */
  onJoinLink?(link: URL): Promise<void>;
}

/**
 * What bounds `plan`'s run on this machine (its transport's limits, as `deno task limits` kept
 * them), or null where they were not measured; a UsageError (bad input: the run does not start)
 * naming a kept file that does not hold limits.
 */
export function boundsOf(plan: RunPlan): RunBounds | null {
  const { bounds, simulated } = TRANSPORTS[plan.transport];
  if (simulated) return null; // virtual time: no limit of this machine bounds it
  let limits;
  try {
    limits = keptLimits();
  } catch (e) {
    throw e instanceof LimitsFileError ? new UsageError(e.message) : e;
  }
  const { primitive, window } = plan.sweep;
  return sweepBounds(limits, { bounds, primitive, procs: plan.procs, window });
}

/** Runs a plan on this machine's ranks, or as one rank of an external launcher's group. */
export async function runPlan(plan: RunPlan, out: RunOutput): Promise<HarnessSummary> {
  const bounds = boundsOf(plan);
  const args: HarnessArgs = {
    sweep: { ...plan.sweep, bounds: bounds ?? undefined },
    report: {
      header: describe(plan),
      table: out.table,
      percentiles: plan.sweep.timing === "per-iter",
      overlap: PRIMITIVES[plan.sweep.primitive].overlap,
      traffic: PRIMITIVES[plan.sweep.primitive].traffic,
      ...(plan.format === "osu"
        ? {
          osu: {
            primitive: cliName(plan.sweep.primitive),
            dtype: plan.sweep.dtype,
            full: plan.full,
            pairs: plan.procs / 2,
            window: plan.sweep.window,
          },
        }
        : {}),
      csv: plan.csv,
      json: plan.json,
      counts: plan.sweep.counts,
      metadata: {
        ...out.metadata,
        limits: bounds,
        reproducible: plan.sweep.reproducible ?? false,
        ...(plan.model && { model: plan.model }),
      },
      // Virtual times: no limit of this machine reads against them.
      bounds: plan.model ? undefined : bounds,
    },
  };
  const module = new URL("./cli_sweep_rank.ts", import.meta.url);
  if (plan.launcher === "env") {
    // This process is one of a group an external launcher started: its rank, or its threads.
    const { timeoutMs, device: gpu, bind, progress } = plan;
    const options = { timeoutMs, gpu, bind };
    if (plan.threads > 1) {
      const transport = plan.transport, threads = plan.threads;
      const group = launchFromEnv<HarnessSummary>(module, { ...options, transport, threads, args });
      return (await group.results)[0];
    }
    await using comm = await joinFromEnv({ ...options, progress, transport: plan.transport });
    return await runHarness(comm, args);
  }
  if (plan.tabs > 0) {
    const group = launchMixedGroup<HarnessSummary>(module, {
      size: plan.processes,
      threads: plan.threads,
      tabs: plan.tabs,
      program: SWEEP_PROGRAM,
      host: plan.host,
      timeoutMs: plan.timeoutMs,
      args,
      signal: out.signal,
      gpu: plan.device,
      onJoinLink: out.onJoinLink ??
        ((link) => printJoinLink(link, plan.tabs, plan.host, plan.timeoutMs)),
    });
    return (await group.results)[0];
  }
  const group = launchGroup<HarnessSummary>(module, {
    size: plan.processes,
    threads: plan.threads,
    transport: plan.transport,
    timeoutMs: plan.timeoutMs,
    args,
    signal: out.signal,
    bind: plan.bind,
    progress: plan.progress,
    gpu: plan.device,
    transportOptions: plan.model,
  });
  return (await group.results)[0];
}

/** A UsageError when `plan` needs a WebGPU device and none can be opened. */
export function checkDevice(plan: RunPlan): Promise<void> {
  const { transport, sweep: { memory } } = plan;
  const what = TRANSPORTS[transport].needsDevice
    ? `--transport ${transport}`
    : `--memory ${memory}`;
  return requireDevice(plan.device, what);
}

/** When this process began: a CSV older than it was not written by this run. */
const STARTED_AT = Date.now();

/**
 * What a stopped run says it leaves: an interrupted one keeps its complete rows, where it wrote
 * any (its CSV is written with its header as the sweep starts).
 */
export function stoppedRun(plan: RunPlan, interrupted: boolean): string | undefined {
  if (!interrupted || !plan.csv) return undefined;
  let written = false;
  try {
    written = (Deno.statSync(plan.csv).mtime?.getTime() ?? 0) >= STARTED_AT - 1000;
  } catch { /* no CSV */ }
  return written ? `; ${plan.csv} holds the complete rows` : `; nothing was written to ${plan.csv}`;
}

/** The task `deno task <primitive>`. */
export function benchmarkTask(primitive: Primitive): Task<RunPlan, typeof BENCHMARK_FLAGS> {
  return {
    name: cliName(primitive),
    summary: `Measures ${cliName(primitive)} over a size sweep.`,
    flags: BENCHMARK_FLAGS,
    habits: translateHabits,
    async plan(flags) {
      const plan = planRun(primitive, flags);
      await checkDevice(plan);
      boundsOf(plan); // a kept limits file that does not read stops the run before it starts
      return plan;
    },
    notes: (plan) => plan.notes,
    run: (plan, signal, argv) => runBenchmark(plan, signal, argv),
    stopped: stoppedRun,
  };
}

/**
 * Runs a planned benchmark as its task does (the table, the files); the exit code: 1 if an
 * element was wrong. `onJoinLink`: where a group with tabs sends its link (printed unless told).
 */
export async function runBenchmark(
  plan: RunPlan,
  signal: AbortSignal,
  argv: string[],
  onJoinLink?: RunOutput["onJoinLink"],
): Promise<number> {
  const metadata = await collectMetadata(argv, { ...plan.sweep, procs: plan.procs });
  const summary = await runPlan(plan, { table: true, metadata, signal, onJoinLink });
  if (summary.wrong === 0) return 0;
  const name = cliName(plan.sweep.primitive);
  console.error(`dccl ${name}: ${summary.wrong} wrong elements; see the wrong column`);
  return 1;
}

/** Entry point of `deno task <primitive>`; returns the exit code. */
export function benchmarkMain(primitive: Primitive, argv: string[]): Promise<number> {
  return taskMain(benchmarkTask(primitive), argv);
}
