/**
 * The plan of one primitive's benchmark: its flags, checked against the registry and this
 * machine's memory into the sizes to run. `sweep` plans each combination it measures this way.
 * @module
 */

import { countsBetween } from "../bench/sizes.ts";
import { memoryNeeded, type SweepOptions, type Timing, TIMINGS } from "../bench/harness.ts";
import { type PrimitiveName, PRIMITIVES } from "../bench/cases.ts";
import { HEAP_MAX_BYTES } from "../primitives/memory/heap.ts";
import { deviceRefusal } from "../kernels/gpu_kernels.ts";
import { algorithmsFor } from "../primitives/auto.ts";
import { needsDevice, sideOfMemory } from "../primitives/transports/transport.ts";
import { type TransportName, TRANSPORTS } from "../deno/registry.ts";
import { DTYPE_INFO, DTYPES, MAX_BYTES, MEMORY_KINDS, REDUCE_OPS } from "../primitives/types.ts";
import { type FlagSpec, integer, number, oneOf, outputFiles, size, UsageError } from "./_flags.ts";
import { type Launch, LAUNCH_FLAGS, planLaunch } from "./_launcher.ts";

const DEFAULT_MAX = 268_435_456;

/** Flags of the primitive tasks (docs/cli.md). */
export const BENCHMARK_FLAGS: Record<string, FlagSpec> = {
  ...LAUNCH_FLAGS,
  procs: { ...LAUNCH_FLAGS.procs, help: "number of ranks (sendrecv: 2)" },
  memory: {
    help: `memory kind: ${MEMORY_KINDS.join(", ")} (default: best for the transport)`,
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
    help: "largest buffer, written as --min (-e: bytes)",
    default: String(DEFAULT_MAX),
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
  op: { help: `reduce op: ${REDUCE_OPS.join(", ")}`, default: "sum" },
  dtype: { help: `element type: ${DTYPES.join(", ")}`, default: "f32" },
  root: { help: "root rank of bcast and reduce", default: "0" },
  timing: { help: `${TIMINGS.join(" or ")} (barrier before each op)`, default: "back-to-back" },
  "out-of-place-only": {
    help: "time only the out-of-place form (by default the in-place form of allreduce, reduce, " +
      "allgather, reduce_scatter, gather and scatter is timed too, as nccl-tests does)",
    boolean: true,
  },
  touch: {
    help: "managed memory: touch the buffers on this side (host or device) before every op; " +
      "the touch is timed apart and subtracted, the migration it causes stays",
  },
  timeout: {
    help: "seconds an operation may wait without progress (0.1 to 86400); a rank still running " +
      "as long again after another finished is stuck",
    default: "30",
  },
  format: {
    help: "the table: nccl-tests (its columns and footer) or osu (OSU's own layout, which its " +
      "scripts read)",
    default: "nccl-tests",
  },
  full: {
    help: "OSU's -f: the fastest and slowest rank's latency and the iterations too (implies " +
      "--format osu)",
    boolean: true,
  },
  csv: { help: "write the rows to this CSV file", path: true },
  json: {
    help: "write rows, samples and run metadata to this JSON file (default with --csv: the " +
      "CSV's path with .json)",
    path: true,
  },
};

/** A validated benchmark run. */
export interface RunPlan {
  sweep: SweepOptions;
  /** The sweep's transport, by name. */
  transport: TransportName;
  /** Whether ranks need a WebGPU device (the gpu transport, gpu or managed memory). */
  device: boolean;
  /** Ranks in the group: processes × threads. */
  procs: number;
  /** Processes (or workers) the launcher starts, and ranks per process (`--threads`). */
  processes: number;
  threads: number;
  timeoutMs: number;
  launcher: Launch["launcher"];
  bind: string;
  csv?: string;
  json?: string;
  /** The table's layout (`--format`), and OSU's full output (`--full`). */
  format: TableFormat;
  full: boolean;
  /** Said on stderr before running (e.g. a lowered default --max). */
  notes: string[];
}

/** The layouts of the table (`--format`). */
export const TABLE_FORMATS = ["nccl-tests", "osu"] as const;
export type TableFormat = typeof TABLE_FORMATS[number];

/** What {@linkcode planRun} knows besides the flag values. */
export interface PlanOptions {
  /** The flags the command line named (not defaults). @default {none} */
  given?: ReadonlySet<string>;
  /** Memory the plan may use, bytes. @default {the machine's available memory} */
  availableBytes?: number;
}

/** Turns flag values into a plan; throws UsageError for anything not accepted. */
export function planRun(
  primitive: PrimitiveName,
  v: Record<string, string | undefined>,
  options: PlanOptions = {},
): RunPlan {
  const availableBytes = options.availableBytes ?? Deno.systemMemoryInfo().available;
  const spec = PRIMITIVES[primitive];
  const launch = planLaunch(v, options.given ?? new Set());
  const { launcher, transport, threads, bind } = launch;
  const procs = launch.procs * threads;
  if (primitive === "sendrecv" && procs !== 2) {
    throw new UsageError(
      `--procs ${launch.procs}${threads > 1 ? ` × --threads ${threads}` : ""} is not accepted: ` +
        `sendrecv runs on 2 ranks`,
    );
  }
  const info = TRANSPORTS[transport];
  const memory = oneOf("memory", v.memory ?? info.bestMemory, info.memory);
  const side = sideOfMemory(info, memory);
  const algorithms = spec.collective
    ? algorithmsFor(spec.collective, { transport: info, side, threads })
    : [];
  const algorithm = oneOf("algorithm", v.algorithm!, ["auto", ...algorithms]);
  const dtype = oneOf("dtype", v.dtype!, DTYPES);
  const device = needsDevice(info, memory);
  const refusal = device ? deviceRefusal(dtype) : undefined;
  if (refusal) {
    throw new UsageError(
      `--dtype ${dtype} is not accepted with ${
        info.needsDevice ? `transport ${transport}` : `${memory} memory`
      }: ${refusal}`,
    );
  }
  const touch = v.touch === undefined ? undefined : oneOf("touch", v.touch, ["host", "device"]);
  if (touch && memory !== "managed") {
    throw new UsageError(
      `--touch ${touch} is not accepted: it touches managed memory (--memory managed)`,
    );
  }
  const op = oneOf("op", v.op!, REDUCE_OPS);
  const root = integer("root", v.root!, 0, procs - 1);
  const timing = oneOf<Timing>("timing", v.timing!, TIMINGS);
  const min = size("min", v.min!, dtype);
  const notes: string[] = [];
  // The default is 2^28 elements, 1 GiB of f32: a wider element's largest buffer is fewer.
  const defaultMax = options.given ? !options.given.has("max") : v.max === String(DEFAULT_MAX);
  const widest = MAX_BYTES / DTYPE_INFO[dtype].bytes;
  if (defaultMax && v.max === String(DEFAULT_MAX) && DEFAULT_MAX > widest) {
    v = { ...v, max: String(widest) };
    notes.push(`--max lowered to ${widest} elements: the largest ${dtype} buffer is 1 GiB`);
  }
  let max = size("max", v.max!, dtype);
  if (max < min) throw new UsageError(`--max ${v.max} is below --min ${v.min}`);
  const factor = integer("step-factor", v["step-factor"]!, 2, 1024);
  const iters = v.iters === undefined ? undefined : integer("iters", v.iters, 1, 1e9);
  const warmup = v.warmup === undefined ? undefined : integer("warmup", v.warmup, 0, 1e9);
  const timeoutMs = number("timeout", v.timeout!, 0.1, 86400) * 1000;
  const { csv, json } = outputFiles(v);

  const shape = { primitive, facts: info, memory, dtype, procs, threads, algorithm };
  const group = memoryNeeded({ ...shape, maxCount: 0 }).groupBytes;
  if (group > 0.9 * availableBytes) {
    throw new UsageError(
      `--procs ${procs} does not fit: ${procs} ${transport} ranks need ${gb(group)} before any ` +
        `buffer (each rank's runtime${
          info.groupBytes(procs) > 0 ? " and the shared rings" : ""
        }); ${gb(availableBytes)} available`,
    );
  }
  const fits = (count: number) => {
    const need = memoryNeeded({ ...shape, maxCount: count });
    return need.totalBytes <= 0.9 * availableBytes && need.heapBytesPerRank <= HEAP_MAX_BYTES;
  };
  if (!fits(max)) {
    const need = memoryNeeded({ ...shape, maxCount: max });
    const problem = need.heapBytesPerRank > HEAP_MAX_BYTES
      ? `${gb(need.heapBytesPerRank)} per rank heap; a rank heap holds ${gb(HEAP_MAX_BYTES)}`
      : `${gb(need.totalBytes)} for ${procs} ranks (buffers, scratch and the ranks' own ` +
        `${gb(need.groupBytes)}); ${gb(availableBytes)} available`;
    if (!defaultMax) throw new UsageError(`--max ${v.max} does not fit: it needs ${problem}`);
    const asked = max;
    while (max > min && !fits(max)) max = Math.floor(max / 2);
    if (!fits(max)) throw new UsageError(`--min ${v.min} does not fit: it needs ${problem}`);
    notes.push(`--max lowered to ${max} elements: ${asked} needs ${problem}`);
  }

  const counts = countsBetween(min, max, { factor, fit: (c) => spec.fit(c, procs) });
  if (counts.length === 0) {
    throw new UsageError(
      `--max ${v.max} is too small: ${primitive} over ${procs} ranks needs at least ${procs} elements`,
    );
  }
  return {
    transport,
    sweep: {
      primitive,
      transport,
      memory,
      algorithm,
      dtype,
      op,
      root,
      counts,
      iters,
      warmup,
      timing,
      inPlace: !v["out-of-place-only"],
      ...(touch ? { touch } : {}),
    },
    device,
    procs,
    processes: launch.procs,
    threads,
    timeoutMs,
    launcher,
    bind,
    csv,
    json,
    format: v.full && !options.given?.has("format")
      ? "osu"
      : oneOf("format", v.format!, TABLE_FORMATS),
    full: v.full === "true",
    notes,
  };
}

function gb(bytes: number): string {
  return `${(bytes / 1e9).toFixed(1)} GB`;
}
