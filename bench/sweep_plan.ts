/**
 * One sweep's choices, as a person typed them, checked against the registry into the sweep the
 * harness runs, and the lines that describe it above its table. The CLI (`planRun`, which adds
 * launching and this machine's memory) and the page's form plan through it alike; each names the
 * fields its own way (`--memory`, or the form's `memory`) and raises its own kind of error.
 * @module
 */

import type { Dtype } from "../core.ts";
import {
  algorithmsFor,
  DTYPE_INFO,
  DTYPES,
  MAX_BYTES,
  needsDevice,
  REDUCE_OPS,
  sideOfMemory,
  type TransportFacts,
} from "../internal.ts";
import { deviceRefusal, isReproducible } from "../kernels/mod.ts";
import {
  cliName,
  DEFAULT_WINDOW,
  type Flow,
  MAX_WINDOW,
  type Primitive,
  PRIMITIVES,
  primitivesWith,
  type Traffic,
} from "./cases.ts";
import { type SweepOptions, type Timing, TIMINGS } from "./harness.ts";
import { bytesName, countForms, countOf, countsBetween } from "./sizes.ts";

/** A sweep's choices as typed: the CLI's flag values, or the page's fields. */
export interface SweepChoices {
  primitive: Primitive;
  /** The transport's facts (the caller chose it among those it can start). */
  transport: TransportFacts;
  /** Ranks in the group (processes × threads), already checked. */
  procs: number;
  /** Ranks per process of a hierarchical group. @default {1} */
  threads?: number;
  /** A memory kind; the transport's best when absent or empty. */
  memory?: string;
  algorithm: string;
  dtype: string;
  op: string;
  root: string;
  /** Smallest and largest buffer, as {@linkcode countOf} reads them. */
  min: string;
  max: string;
  /** Each size is the previous one times this. @default {"2"} */
  stepFactor?: string;
  iters?: string;
  warmup?: string;
  timing: string;
  /** Managed memory: the side to touch the buffers on before every op. */
  touch?: string;
  inPlace: boolean;
  /** Messages per window of a streaming test (`bw`, `bibw`, `mbw_mr`). */
  window?: string;
  /** Sums reproducibly (`--reproducible`). */
  reproducible?: boolean;
  /** alltoallv's traffic (the caller read its matrix or skew). */
  traffic?: Traffic;
}

/** How a caller names its fields and refuses a choice. */
export interface ChoiceWords {
  /** The field as the person typed it (`--memory`, or the form's `memory`). */
  field(name: string): string;
  /** The error to throw for a refused choice (one line). */
  refuse(message: string): Error;
  /**
   * The largest count to run, given the largest and smallest asked for and the sweep so far (the
   * CLI lowers it to fit this machine's memory). @default {the one asked for}
   */
  fitMax?(max: number, min: number, sweep: Omit<SweepOptions, "counts">): number;
}

/** A checked sweep: what the harness runs, and whether its ranks need a WebGPU device. */
export interface PlannedSweep {
  sweep: SweepOptions;
  device: boolean;
}

/** Checks `c` into a sweep, refusing the first choice not accepted as `words` says. */
export function planSweep(c: SweepChoices, words: ChoiceWords): PlannedSweep {
  const { primitive, transport, procs } = c;
  const spec = PRIMITIVES[primitive];
  if (spec.ranks && !spec.ranks.accepts(procs)) {
    throw words.refuse(
      `${words.field("procs")} ${procs} is not accepted: ${cliName(primitive)} ${spec.ranks.rule}`,
    );
  }
  const refuse = (name: string, value: string, accepted: string) =>
    words.refuse(`${words.field(name)} ${value} is not accepted${accepted}`);
  const oneOf = <T extends string>(name: string, value: string, accepted: readonly T[]): T => {
    const found = accepted.find((a) => a === value);
    if (found === undefined) throw refuse(name, value, `; accepted: ${accepted.join(", ")}`);
    return found;
  };
  const integer = (name: string, value: string, min: number, max: number) => {
    const n = /^\d+$/.test(value.trim()) ? Number(value) : NaN;
    if (!(Number.isSafeInteger(n) && n >= min && n <= max)) {
      throw refuse(name, value, `: expected an integer from ${min} to ${max}`);
    }
    return n;
  };
  const memory = oneOf("memory", c.memory || transport.bestMemory, transport.memory);
  const side = sideOfMemory(transport, memory);
  const algorithms = spec.collective
    ? algorithmsFor(spec.collective, { transport, side, threads: c.threads })
    : [];
  if (spec.collective && algorithms.length === 0) {
    const collective = spec.collective;
    const runs = transport.memory.filter((m) =>
      algorithmsFor(collective, { transport, side: sideOfMemory(transport, m), threads: c.threads })
        .length > 0
    );
    throw words.refuse(
      `${cliName(primitive)} has no algorithm for ${memory} memory on transport ` +
        `${transport.name}: give ${words.field("memory")} ${
          runs.join(" or ")
        }, or another transport`,
    );
  }
  const algorithm = oneOf("algorithm", c.algorithm, ["auto", ...algorithms]);
  const dtype = oneOf<Dtype>("dtype", c.dtype, DTYPES);
  const device = needsDevice(transport, memory);
  const refusal = device ? deviceRefusal(dtype) : undefined;
  if (refusal) {
    throw words.refuse(
      `${words.field("dtype")} ${dtype} is not accepted with ${
        transport.needsDevice ? `transport ${transport.name}` : `${memory} memory`
      }: ${refusal}`,
    );
  }
  const touch = c.touch === undefined ? undefined : oneOf("touch", c.touch, ["host", "device"]);
  if (touch && memory !== "managed") {
    throw words.refuse(
      `${words.field("touch")} ${touch} is not accepted: it touches managed memory ` +
        `(${words.field("memory")} managed)`,
    );
  }
  const op = oneOf("op", c.op, REDUCE_OPS);
  const root = integer("root", c.root, 0, procs - 1);
  const timing = oneOf<Timing>("timing", c.timing, TIMINGS);
  const count = (name: "min" | "max") => {
    const n = countOf(c[name].trim(), dtype);
    if (n === undefined) throw refuse(name, c[name], `: expected ${countForms(dtype)}`);
    return n;
  };
  const min = count("min");
  let max = count("max");
  if (max < min) {
    throw words.refuse(`${words.field("max")} ${c.max} is below ${words.field("min")} ${c.min}`);
  }
  const factor = integer("step-factor", c.stepFactor ?? "2", 2, 1024);
  const iters = c.iters ? integer("iters", c.iters, 1, 1e9) : undefined;
  const warmup = c.warmup ? integer("warmup", c.warmup, 0, 1e9) : undefined;
  if (c.window !== undefined && !spec.windowed) {
    throw words.refuse(
      `${words.field("window")} ${c.window} is not accepted: it applies to ${
        primitivesWith((p) => PRIMITIVES[p].windowed)
      }, not ${cliName(primitive)}`,
    );
  }
  if (c.reproducible) reproducibleRun(primitive, op, dtype, words);
  const window = spec.windowed
    ? integer("window", c.window ?? String(DEFAULT_WINDOW), 1, MAX_WINDOW)
    : undefined;
  // A window's receives are one buffer of `window` messages: it too is at most 1 GiB.
  const elementBytes = DTYPE_INFO[dtype].bytes;
  if (window && max * window * elementBytes > MAX_BYTES) {
    throw words.refuse(
      `${words.field("max")} ${c.max} is not accepted with a window of ${window}: its receives ` +
        `take ${bytesName(max * window * elementBytes)}, above the largest buffer's 1 GiB; lower ` +
        `${words.field("max")} (at most ${Math.floor(MAX_BYTES / window / elementBytes)}) or ` +
        `${words.field("window")}`,
    );
  }
  const sweep: Omit<SweepOptions, "counts"> = {
    primitive,
    transport: transport.name,
    memory,
    algorithm,
    dtype,
    op,
    root,
    iters,
    warmup,
    timing,
    inPlace: c.inPlace && spec.inPlace,
    ...(touch ? { touch } : {}),
    ...(window ? { window } : {}),
    ...(c.reproducible ? { reproducible: true } : {}),
    ...(c.traffic ? { traffic: c.traffic } : {}),
  };
  max = words.fitMax?.(max, min, sweep) ?? max;
  const counts = countsBetween(min, max, { factor, fit: (n) => spec.fit(n, procs) });
  if (counts.length === 0) {
    throw words.refuse(
      `${words.field("max")} ${c.max} is too small: ${
        cliName(primitive)
      } over ${procs} ranks needs at ` +
        `least ${procs} elements`,
    );
  }
  return { sweep: { ...sweep, counts }, device };
}

/** The primitives that sum reproducibly. */
const REPRODUCIBLE: readonly Primitive[] = [
  "allreduce",
  "reduce",
  "reduceScatter",
  "reduceScatterv",
];

/** Refuses a reproducible run of what has none (one line: what applies). */
function reproducibleRun(primitive: Primitive, op: string, dtype: Dtype, words: ChoiceWords): void {
  const field = words.field("reproducible");
  if (!REPRODUCIBLE.includes(primitive)) {
    throw words.refuse(
      `${field} applies to ${REPRODUCIBLE.map(cliName).join(", ")}, not ${cliName(primitive)}`,
    );
  }
  if (op !== "sum" && op !== "avg") {
    throw words.refuse(`${field} applies to ${words.field("op")} sum and avg, not ${op}`);
  }
  if (!isReproducible(dtype)) {
    throw words.refuse(
      `${field} applies to f32, f64, f16 and bf16, not ${dtype} (its sums are exact already)`,
    );
  }
}

/** How a planned sweep's ranks run, for the lines above its table. */
export interface SweepRanks {
  procs: number;
  /** Processes (or workers) and ranks per process (`--threads`). @default {procs, 1} */
  processes?: number;
  threads?: number;
  /** Browser tabs among the ranks (after the processes). @default {0} */
  tabs?: number;
  /** The transport's facts: logical ranks on one device, or ranks of their own. */
  transport: TransportFacts;
  /** Whether the ranks time to the device's completion. */
  device: boolean;
}

/** The lines above a sweep's table: what ran, how it was timed, and the units. */
export function describeSweep(s: SweepOptions, ranks: SweepRanks): string[] {
  const spec = PRIMITIVES[s.primitive];
  // Only what this primitive takes: sendrecv names no op and no root.
  const takes = [
    `algorithm ${s.algorithm}`,
    ...(spec.reduces ? [`op ${s.op}${s.reproducible ? " (reproducible)" : ""}`] : []),
    `dtype ${s.dtype}`,
    ...(spec.rooted ? [`root ${s.root}`] : []),
  ].join(", ");
  const { procs, threads = 1, processes = procs, tabs = 0 } = ranks;
  const group = tabs > 0
    ? `${procs} ranks (${processes} Deno processes, ${tabs} browser tabs${
      threads > 1 ? `, × ${threads} threads each` : ""
    })`
    : ranks.transport.simulated
    ? `${procs} simulated ranks (virtual time)`
    : ranks.transport.launch === "thread"
    ? `${procs} logical ranks on 1 device`
    : threads > 1
    ? `${procs} ranks (${processes} processes × ${threads} threads)`
    : `${procs} ranks`;
  const flow = spec.flow?.(procs, s.window ?? DEFAULT_WINDOW);
  const touched = s.touch ? `, touched on the ${s.touch} before every op (time subtracted)` : "";
  // Each line fits a 120-column terminal, as the table does.
  return [
    `dccl ${
      cliName(s.primitive)
    }: ${group}, transport ${s.transport}, memory ${s.memory}${touched}`,
    takes,
    (s.timing === "per-iter"
      ? "timing per-iter: a barrier, then each op timed alone on every rank"
      : "timing back-to-back: after a barrier every rank times `iters` consecutive ops") +
    (ranks.device ? ", to the device's completion" : ""),
    `iters ${s.iters ?? "adaptive (~200 ms per size, 2 to 10000)"}, warmup ${
      s.warmup ?? "adaptive"
    }; time = sum of rank times / (ranks × iters${flow ? " × messages" : ""})`,
    ...(flow ? [flowLine(s, flow, procs)] : []),
    ...(spec.traffic ? [trafficLine(s)] : []),
    `algbw = bytes${
      flow ? " × streams" : ""
    }/time (GB/s, 1 GB = 1e9 B); busbw = algbw × ${spec.busFormula}; ` +
    (s.reproducible
      ? "#wrong = elements whose bits ≠ the reproducible sum of every rank's inputs, all ranks"
      : "#wrong = elements ≠ exact result, all ranks"),
    "the CSV adds iters, min/max (fastest/slowest rank), Gb/s = bytes × 8 / time / 1e9",
  ];
}

/** What one operation of a point-to-point test on `procs` ranks is, in messages and streams. */
function flowLine(s: SweepOptions, flow: Flow, procs: number): string {
  // More streams than pairs: each pair streams both ways (bibw).
  const bothWays = flow.streams > procs / 2;
  const what = s.window === undefined
    ? "a ping-pong: time is half a round trip"
    : `a window of ${s.window} sends${
      bothWays ? " each way" : ", then a one-element acknowledgement"
    }`;
  return `one op is ${what} (${flow.messages} messages); ${flow.streams} stream${
    flow.streams > 1 ? "s" : ""
  } at once (pairs rank i ↔ i + n/2${bothWays ? ", both ways" : ""})`;
}

/** What an alltoallv's traffic is, and what its columns say. */
function trafficLine(s: SweepOptions): string {
  return `traffic ${
    s.traffic?.label ?? "balanced (equal counts)"
  }, scaled at each size to size × count ` +
    `elements; busiest = the bytes the busiest rank sends or receives, imbalance = busiest / count` +
    (s.traffic ? "; balanced = the balanced run of the same total, timed beside it" : "");
}
