/**
 * `deno task sim-calibrate --latency FILE --bw FILE [--out model.json]`: the `sim` model of a
 * network from two point-to-point runs on it, dccl's (`deno task latency`, `deno task bw`, CSV or
 * JSON) or OSU's (`osu_latency`, `osu_bw` output): L the one-way time at the smallest size less
 * the two overheads, the link the bandwidth at the largest size. `--sim-model` reads the file it
 * writes (docs/transports/sim.md, "Calibration").
 * @module
 */

import { DEFAULT_MODEL, type SimModel } from "../internal.ts";
import { readResultsFile, writeAtomically } from "../deno/mod.ts";
import type { Point } from "../bench/compare/results.ts";
import { defineFlags, type Flags, UsageError, writableFile } from "./common/flags.ts";
import { reduceRate, time } from "./bench/sim_flags.ts";
import { type Task, taskMain } from "./common/task.ts";

const FLAGS = defineFlags({
  latency: { help: "a ping-pong's one-way times (deno task latency, osu_latency)", path: true },
  bw: { help: "a window of sends' bandwidth (deno task bw, osu_bw)", path: true },
  overhead: { help: `LogGP's o to keep out of L (default ${DEFAULT_MODEL.overheadUs}us)` },
  "reduce-rate": { help: "the ranks' reduction rate, e.g. 2.6GB/s (default: the model's)" },
  out: { help: "write the model here (default: print it)", path: true },
});

interface CalibrationPlan {
  latency: string;
  bw: string;
  overheadUs: number;
  reduceGBps?: number;
  out?: string;
}

function plan(v: Flags<typeof FLAGS>): CalibrationPlan {
  if (v.latency === undefined || v.bw === undefined) {
    throw new UsageError("--latency and --bw are both needed: a ping-pong's file and a bw file's");
  }
  return {
    latency: v.latency,
    bw: v.bw,
    overheadUs: time("overhead", v.overhead) ?? DEFAULT_MODEL.overheadUs,
    reduceGBps: reduceRate(v["reduce-rate"]),
    out: v.out === undefined ? undefined : writableFile("out", v.out),
  };
}

/** The file's points, smallest size first; a UsageError naming it when it has none. */
async function pointsOf(flag: string, path: string): Promise<Point[]> {
  const points: Point[] = [];
  try {
    for await (const p of readResultsFile(path)) points.push(p);
  } catch (e) {
    throw new UsageError(`--${flag} ${path} is not accepted: ${(e as Error).message}`);
  }
  if (points.length === 0) throw new UsageError(`--${flag} ${path} is not accepted: no results`);
  if (points.some((p) => p.wrong > 0)) {
    throw new UsageError(`--${flag} ${path} is not accepted: it counts wrong elements`);
  }
  return points.sort((a, b) => a.floats - b.floats);
}

const baseName = (path: string) => path.split("/").at(-1)!;

async function run(p: CalibrationPlan): Promise<number> {
  const smallest = (await pointsOf("latency", p.latency))[0];
  const largest = (await pointsOf("bw", p.bw)).at(-1)!;
  const latencyUs = smallest.time_us - 2 * p.overheadUs;
  if (!(latencyUs > 0) || !(largest.gbps > 0)) {
    throw new UsageError(
      `the runs give no model: ${smallest.time_us} µs one way less 2 × o ${p.overheadUs} µs, ` +
        `${largest.gbps} Gb/s`,
    );
  }
  const round = (x: number) => Number(x.toPrecision(4));
  const model: Partial<SimModel> = {
    inter: { latencyUs: round(latencyUs), gbps: round(largest.gbps) },
    overheadUs: p.overheadUs,
    ...(p.reduceGBps !== undefined && { reduceGBps: p.reduceGBps }),
    source: `sim-calibrate: L = ${baseName(p.latency)}'s one-way ${
      round(smallest.time_us)
    } µs at ${smallest.floats} floats less 2o; link = ${baseName(p.bw)}'s ${
      round(largest.gbps)
    } Gb/s at ${largest.floats} floats`,
  };
  const text = JSON.stringify(model, null, 2) + "\n";
  if (p.out) {
    writeAtomically(p.out, text);
    console.log(`dccl sim-calibrate: model written to ${p.out}`);
  } else console.log(text.trimEnd());
  return 0;
}

const TASK: Task<CalibrationPlan, typeof FLAGS> = {
  name: "sim-calibrate",
  summary: "A sim model (--sim-model FILE) from a network's latency and bw runs.",
  flags: FLAGS,
  plan,
  run,
};

Deno.exit(await taskMain(TASK, Deno.args));
