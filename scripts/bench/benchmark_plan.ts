/**
 * The plan of one primitive's benchmark: its flags, checked against the registry and this
 * machine's memory into the sizes to run. `sweep` plans each combination it measures this way.
 * @module
 */

import {
  type FootprintQuery,
  memoryNeeded,
  type SweepOptions,
  TIMINGS,
} from "../../bench/harness.ts";
import {
  cliName,
  pairwise,
  type Primitive,
  PRIMITIVES,
  primitivesWith,
} from "../../bench/cases.ts";
import { planSweep } from "../../bench/sweep_plan.ts";
import { HEAP_MAX_BYTES } from "../../internal.ts";
import { type TransportName, TRANSPORTS } from "../../deno/mod.ts";
import { DTYPE_INFO, DTYPES, MAX_BYTES, MEMORY_KINDS, REDUCE_OPS } from "../../internal.ts";
import { defineFlags, type Flags, outputFiles, UsageError } from "../common/flags.ts";
import { groupSize, type Launch, LAUNCH_FLAGS, planLaunch } from "../common/launcher.ts";
import { trafficOf } from "./traffic_flags.ts";
import { planModel, SIM_FLAGS } from "./sim_flags.ts";
import type { SimModel } from "../../internal.ts";

/**
 * A simulated run's iterations unless told: its virtual times repeat exactly once warm, so a few
 * suffice (and each costs real time for every simulated rank).
 */
const SIM_ITERS = "4", SIM_WARMUP = "1";

/** The largest buffer unless `--max` says: 2^28 elements, 1 GiB of f32. */
const DEFAULT_MAX = 268_435_456;

/** The point-to-point tests' largest message unless `--max` says, as OSU's: 4 MiB. */
const OSU_MAX = "4MB";

/** The layouts of the table (`--format`). */
export const TABLE_FORMATS = ["nccl-tests", "osu"] as const;
export type TableFormat = typeof TABLE_FORMATS[number];

/** Flags of the primitive tasks (docs/cli.md). */
export const BENCHMARK_FLAGS = defineFlags({
  ...LAUNCH_FLAGS,
  ...SIM_FLAGS,
  procs: {
    ...LAUNCH_FLAGS.procs,
    help: "number of ranks (sendrecv: 2; latency, bw, bibw, mbw_mr: 2 × --pairs)",
  },
  pairs: {
    help: "latency, bw, bibw and mbw_mr: pairs of ranks measured at once, rank i with rank " +
      "i + pairs (osu_mbw_mr's and osu_multi_lat's pairs; default --procs / 2)",
    kind: "integer",
    min: 1,
    max: 512,
  },
  window: {
    help: "bw, bibw and mbw_mr: messages posted at once per window (OSU's -W; default 64)",
    aliases: ["-W"],
  },
  matrix: {
    help: "alltoallv: an N×N CSV of what rank i sends rank j (elements, or bytes with B), " +
      "scaled at each size to the balanced run's total",
    path: true,
  },
  skew: {
    help: "alltoallv: generated traffic, zipf:S[:SEED] (a mixture-of-experts router's: rank j " +
      "receives as 1/k^S, k its popularity)",
  },
  memory: {
    help: `memory kind: ${MEMORY_KINDS.join(", ")} (default: best for the transport)`,
    kind: "choice",
    choices: MEMORY_KINDS,
  },
  algorithm: { help: "algorithm name, or auto to pick per size", default: "auto" },
  min: {
    help: "smallest buffer in elements (2^20, 1M, 4K, an integer), or bytes with a B suffix " +
      "(-b: bytes, as nccl-tests)",
    default: "1",
    aliases: ["-b"],
    bytes: true,
  },
  max: {
    help: `largest buffer, written as --min (-e: bytes; default ${DEFAULT_MAX}, or 1 GiB of a ` +
      "wider element)",
    aliases: ["-e"],
    bytes: true,
  },
  "step-factor": {
    help: "each size is the previous one times this (nccl-tests' -f N)",
    default: "2",
  },
  iters: {
    help: "timed iterations per size (default: adaptive, ~200 ms per size)",
    aliases: ["-n", "-i"],
  },
  warmup: {
    help: "untimed iterations per size (default: adaptive, ~50 ms; 3 s at the first size)",
    aliases: ["-w"],
  },
  op: {
    help: `reduce op: ${REDUCE_OPS.join(", ")}`,
    kind: "choice",
    choices: REDUCE_OPS,
    default: "sum",
  },
  dtype: {
    help: `element type: ${DTYPES.join(", ")}`,
    kind: "choice",
    choices: DTYPES,
    default: "f32",
  },
  root: { help: "root rank of bcast and reduce", default: "0" },
  timing: {
    help: `${TIMINGS.join(" or ")} (barrier before each op)`,
    kind: "choice",
    choices: TIMINGS,
    default: "back-to-back",
  },
  reproducible: {
    help: "sum bits that depend only on the inputs, not the algorithm, transport or rank order " +
      "(allreduce, reduce, reduce_scatter(v); sum and avg of f32, f64, f16, bf16; docs/dtypes.md)",
    kind: "switch",
  },
  "out-of-place-only": {
    help: "time only the out-of-place form (by default the in-place form of allreduce, reduce, " +
      "allgather, reduce_scatter, gather and scatter is timed too, as nccl-tests does)",
    kind: "switch",
  },
  touch: {
    help: "managed memory: touch the buffers on this side (host or device) before every op; " +
      "the touch is timed apart and subtracted, the migration it causes stays",
  },
  timeout: {
    help: "seconds an operation may wait without progress (0.1 to 86400); a rank still running " +
      "as long again after another finished is stuck",
    kind: "number",
    min: 0.1,
    max: 86400,
    default: 30,
  },
  format: {
    help: "the table: nccl-tests (its columns and footer) or osu (OSU's own layout, which its " +
      "scripts read)",
    kind: "choice",
    choices: TABLE_FORMATS,
    default: "nccl-tests",
  },
  full: {
    help: "OSU's -f: the fastest and slowest rank's latency and the iterations too (implies " +
      "--format osu)",
    kind: "switch",
  },
  csv: { help: "write the rows to this CSV file", path: true },
  json: {
    help: "write rows, samples and run metadata to this JSON file (default with --csv: the " +
      "CSV's path with .json)",
    path: true,
  },
});

/** The benchmark tasks' parsed flags. */
export type BenchmarkFlags = Flags<typeof BENCHMARK_FLAGS>;

/** A validated benchmark run. */
export interface RunPlan {
  sweep: SweepOptions;
  /** The sweep's transport, by name. */
  transport: TransportName;
  /** Whether ranks need a WebGPU device (the gpu transport, gpu or managed memory). */
  device: boolean;
  /** Ranks in the group: processes and tabs, × threads each. */
  procs: number;
  /** Processes (or workers) the launcher starts, and ranks per process (`--threads`). */
  processes: number;
  threads: number;
  timeoutMs: number;
  launcher: Launch["launcher"];
  bind: string;
  /** Browser tabs joining the processes (a mixed group), and where it listens. */
  tabs: number;
  host: string;
  /** Where a process rank's calls progress (`--progress`). */
  progress: Launch["progress"];
  csv?: string;
  json?: string;
  /** The table's layout (`--format`), and OSU's full output (`--full`). */
  format: TableFormat;
  full: boolean;
  /** Said on stderr before running (e.g. a lowered default --max). */
  notes: string[];
  /** The network a simulated run (`--transport sim`) models. */
  model?: SimModel;
}

/** What {@linkcode planRun} knows besides the flags. */
export interface PlanOptions {
  /** Memory the plan may use, bytes. @default {the machine's available memory} */
  availableBytes?: number;
}

/** Turns the flags into a plan; throws UsageError for anything not accepted. */
export function planRun(
  primitive: Primitive,
  v: BenchmarkFlags,
  options: PlanOptions = {},
): RunPlan {
  const availableBytes = options.availableBytes ?? Deno.systemMemoryInfo().available;
  const spec = PRIMITIVES[primitive];
  const launch = planLaunch(pairedRanks(primitive, v));
  const { launcher, transport, threads, bind, tabs, host, progress } = launch;
  const procs = groupSize(launch);
  if (primitive === "sendrecv" && procs !== 2) {
    throw new UsageError(
      `--procs ${launch.procs}${threads > 1 ? ` × --threads ${threads}` : ""} is not accepted: ` +
        `sendrecv runs on 2 ranks`,
    );
  }
  const info = TRANSPORTS[transport];
  const notes: string[] = [];
  // Unless --max was given, the largest buffer may be lowered to fit (fitMemory).
  const asked = v.given.has("max") ? v.max : undefined;
  // A wider element's largest buffer holds fewer than the default's.
  const widest = MAX_BYTES / DTYPE_INFO[v.dtype].bytes;
  if (v.max === undefined && !spec.flow && DEFAULT_MAX > widest) {
    notes.push(`--max lowered to ${widest} elements: the largest ${v.dtype} buffer is 1 GiB`);
  }
  const max = v.max ??
    (spec.flow ? OSU_MAX : String(Math.min(DEFAULT_MAX, widest)));
  const { csv, json } = outputFiles(v);
  const simulated = info.simulated ?? false;
  let model: SimModel | undefined;
  const { sweep, device } = planSweep({
    primitive,
    transport: info,
    procs,
    threads,
    // A progress thread carries the heap's shared buffers without a copy.
    memory: v.memory ?? (progress === "thread" ? "shared" : undefined),
    algorithm: v.algorithm,
    dtype: v.dtype,
    op: v.op,
    root: v.root,
    min: v.min,
    max,
    stepFactor: v["step-factor"],
    iters: v.iters ?? (simulated ? SIM_ITERS : undefined),
    warmup: v.warmup ?? (simulated ? SIM_WARMUP : undefined),
    timing: v.timing,
    touch: v.touch,
    inPlace: !v["out-of-place-only"],
    window: v.window,
    reproducible: v.reproducible,
    traffic: trafficFor(primitive, v, procs),
  }, {
    field: (name) => `--${name}`,
    refuse: (message) => new UsageError(message),
    fitMax: (max, min, planned) => {
      const shape = { ...planned, facts: info, procs, threads };
      model = planModel(v, info, procs, () => memoryNeeded({ ...shape, maxCount: max }).totalBytes);
      return fitMemory(max, min, {
        // A phantom run's buffers alias one rank's: the group needs one rank's memory for them.
        shape: { ...shape, phantom: model?.payload === "phantom" },
        availableBytes,
        asked: { max: asked, min: v.min },
        notes,
      });
    },
  });
  model ??= planModel(v, info, procs, () => 0);
  if (progress === "thread" && device) {
    throw new UsageError(
      `--progress thread is not accepted with --memory ${v.memory}: a progress thread carries ` +
        `host memory (host, shared)`,
    );
  }
  return {
    transport,
    sweep,
    device,
    procs,
    processes: launch.procs,
    threads,
    timeoutMs: v.timeout * 1000,
    launcher,
    bind,
    tabs,
    host,
    progress,
    csv,
    json,
    format: v.full && !v.given.has("format") ? "osu" : v.format,
    full: v.full,
    notes,
    model,
  };
}

/** alltoallv's traffic by `--matrix` or `--skew`; a UsageError for any other primitive. */
function trafficFor(primitive: Primitive, v: BenchmarkFlags, procs: number) {
  const given = v.matrix !== undefined ? "matrix" : v.skew !== undefined ? "skew" : undefined;
  if (given && !PRIMITIVES[primitive].traffic) {
    throw new UsageError(
      `--${given} is not accepted: it applies to ${
        primitivesWith((p) => PRIMITIVES[p].traffic)
      }, not ${cliName(primitive)}`,
    );
  }
  return trafficOf(v, procs, v.dtype);
}

/**
 * The flags with `--pairs` read as ranks: 2 × pairs in all (processes × threads), which `--procs`,
 * if given, must agree with; only the pairwise tests take it.
 */
function pairedRanks(primitive: Primitive, v: BenchmarkFlags): BenchmarkFlags {
  if (v.pairs === undefined) return v;
  const { threads } = v;
  if (!pairwise(primitive)) {
    throw new UsageError(
      `--pairs ${v.pairs} is not accepted: it applies to ${primitivesWith(pairwise)}, not ${
        cliName(primitive)
      }`,
    );
  }
  const ranks = 2 * v.pairs;
  if (ranks % threads !== 0 || (v.given.has("procs") && v.procs * threads !== ranks)) {
    throw new UsageError(
      `--pairs ${v.pairs} is not accepted: it needs ${ranks} ranks, and --procs ${v.procs}` +
        `${threads > 1 ? ` × --threads ${threads}` : ""} ${
          v.given.has("procs") ? "gives another count" : "cannot divide them"
        }`,
    );
  }
  return { ...v, procs: ranks / threads };
}

/**
 * The largest count of `max` or below (halving, down to `min`) whose sweep fits this machine's
 * memory and a rank heap; a UsageError when a `max` the user `asked` for does not fit, or when
 * not even `min` (or the ranks alone) does. Lowering is said in `notes`.
 */
function fitMemory(
  max: number,
  min: number,
  o: {
    shape: Omit<FootprintQuery, "maxCount">;
    availableBytes: number;
    /** `--max` and `--min` as given (`max` undefined: the default, which may be lowered). */
    asked: { max?: string; min: string };
    notes: string[];
  },
): number {
  const { shape, availableBytes } = o;
  const { procs } = shape, info = shape.facts;
  const group = memoryNeeded({ ...shape, maxCount: 0 }).groupBytes;
  if (group > 0.9 * availableBytes) {
    throw new UsageError(
      `--procs ${procs} does not fit: ${procs} ${info.name} ranks need ${gb(group)} before any ` +
        `buffer (each rank's runtime${
          info.groupBytes(procs) > 0 ? " and the shared rings" : ""
        }); ${gb(availableBytes)} available`,
    );
  }
  const fits = (count: number) => {
    const need = memoryNeeded({ ...shape, maxCount: count });
    return need.totalBytes <= 0.9 * availableBytes && need.heapBytesPerRank <= HEAP_MAX_BYTES &&
      need.largestBufferBytes <= MAX_BYTES;
  };
  if (fits(max)) return max;
  const need = memoryNeeded({ ...shape, maxCount: max });
  const problem = need.largestBufferBytes > MAX_BYTES
    ? `a ${gb(need.largestBufferBytes)} buffer on its busiest rank; a buffer holds at most 1 GiB`
    : need.heapBytesPerRank > HEAP_MAX_BYTES
    ? `${gb(need.heapBytesPerRank)} per rank heap; a rank heap holds ${gb(HEAP_MAX_BYTES)}`
    : `${gb(need.totalBytes)} for ${procs} ranks (buffers, scratch and the ranks' own ` +
      `${gb(need.groupBytes)}); ${gb(availableBytes)} available`;
  if (o.asked.max !== undefined) {
    throw new UsageError(`--max ${o.asked.max} does not fit: it needs ${problem}`);
  }
  let fitted = max;
  while (fitted > min && !fits(fitted)) fitted = Math.floor(fitted / 2);
  if (!fits(fitted)) throw new UsageError(`--min ${o.asked.min} does not fit: it needs ${problem}`);
  o.notes.push(`--max lowered to ${fitted} elements: ${max} needs ${problem}`);
  return fitted;
}

function gb(bytes: number): string {
  return `${(bytes / 1e9).toFixed(1)} GB`;
}
