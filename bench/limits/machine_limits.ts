/**
 * The machine's limits (`deno task limits`, or the page's probe in a tab) and every run read
 * against them: which limits bound a run (its transport's `bounds`), the share of them each row
 * reaches (`pct_limit`), and the footer's lines (docs/measuring.md, "The machine's limits").
 * @module
 */

import type { TransportBounds } from "../../internal.ts";
import type { ResultRow } from "../metrics.ts";
import { DEFAULT_WINDOW, type Primitive, PRIMITIVES } from "../cases.ts";
import { bytesName } from "../sizes.ts";
import type { Sampled } from "./measure.ts";
import type { BandwidthCurve, DeviceLimits, WindowCurve } from "./probes.ts";

/** What the limits were measured on; the fingerprint is a digest of it. */
export interface MachineFacts {
  /** The CPU's model (a tab: its user agent's platform). */
  cpu: string;
  /** Logical CPUs. */
  cores: number;
  /** `deno`, or the browser. */
  runtime: string;
  /** The runtime's version. */
  version: string;
}

/** A machine's floors and ceilings, as `deno task limits` writes them (JSON). */
export interface MachineLimits {
  /** Format of this document. */
  format: 1;
  /** A digest of `machine`: limits are kept per fingerprint. */
  fingerprint: string;
  /** What they were measured on. */
  machine: MachineFacts;
  /** When they were measured (ISO 8601). */
  date: string;
  /** One cache line between two workers and back through a SharedArrayBuffer, µs. */
  cacheLineRoundTripUs: Sampled;
  /** A small message between two workers and back (postMessage), µs. */
  postMessageRoundTripUs: Sampled;
  /** 4 bytes over loopback TCP and back through socket calls, µs (where there are any). */
  socketRoundTripUs?: Sampled;
  /** 4 bytes over loopback TCP and back through Deno's reads and writes, µs. */
  tcpRoundTripUs?: Sampled;
  /** One loopback TCP connection's stream, GB/s. */
  loopbackStreamGBs?: Sampled;
  /**
   * Copy bandwidth of one core and of all cores at once, GB/s by size; and one core's copy into
   * a window of destinations, as a stream's receiver fills its receives (files of earlier
   * versions: none).
   */
  copy: { one: BandwidthCurve; all: BandwidthCurve; window?: WindowCurve };
  /** Reduce (read two, write one) bandwidth likewise. */
  reduce: { one: BandwidthCurve; all: BandwidthCurve };
  /** The WebAssembly SIMD peak of one thread. */
  simdPeak: { gflops: Sampled; build: string };
  /** The device's copy bandwidth and submit round trip, where an adapter exists. */
  device?: DeviceLimits;
  /** How busy the machine was while they were measured (files of earlier versions: unknown). */
  sitting?: Sitting;
}

/**
 * How busy a machine was around a sitting of its limits: the share of its CPUs' time that other
 * processes used in a second just before and just after (where the system says; else the load
 * average per core), and whether that makes the sitting too busy to stand for the machine.
 */
export interface Sitting {
  /** Others' share of the CPUs before and after, 0 … 1 (or load per core). */
  load: number[];
  /** Too busy to be the machine's limits: kept only when told (`--keep-busy`), and said so. */
  busy: boolean;
}

/** Others' share of the CPUs above which a sitting is busy. */
export const BUSY_SHARE = 0.25;

/** What bounds one run: its latency floor and its bandwidth ceiling (a rank's share). */
export interface RunBounds {
  /** The limits' fingerprint. */
  fingerprint: string;
  /** When they were measured (ISO 8601). */
  measured: string;
  /** The floor: which round trip, and how long it takes. */
  latency: { name: string; roundTripUs: number };
  /** The busbw (GB/s) the run can reach at each size. */
  bandwidth: { name: string; bytes: number[]; gbs: number[] };
  /** How busy the machine was while the limits were measured, where the file says. */
  sitting?: Sitting;
}

const LATENCY_NAMES: Record<TransportBounds["latency"], string> = {
  cacheLine: "cache-line round trip",
  postMessage: "postMessage round trip",
  socket: "loopback socket round trip",
  device: "device submit round trip",
};

/** What a run is, for its bounds. */
export interface RunShape {
  /** The transport's limits (`TransportFacts.bounds`). */
  bounds: TransportBounds;
  /** Ranks on this machine. */
  procs: number;
  /** nccl-tests' bus factor at `procs` ranks. */
  busFactor: number;
  /** The least memory work of a call, in multiples of its size (bench/cases.ts `work`). */
  work: { copy: number; reduce: number };
  /** A streaming test's messages per window: its receiver copies into that many blocks. */
  window?: number;
}

/**
 * What bounds a sweep of `run.primitive` on `run.procs` ranks of a transport with `run.bounds`
 * (a streaming test: `run.window` messages a window), on a machine of `limits`: null where no
 * limits were measured (or not those this transport needs).
 */
export function sweepBounds(
  limits: MachineLimits | undefined,
  run: { bounds: TransportBounds; primitive: Primitive; procs: number; window?: number },
): RunBounds | null {
  const { bounds, primitive, procs } = run;
  const spec = PRIMITIVES[primitive];
  const shape: RunShape = {
    bounds,
    procs,
    busFactor: spec.busFactor(procs),
    work: spec.work(procs),
    ...(spec.windowed && { window: run.window ?? DEFAULT_WINDOW }),
  };
  return (limits && runBounds(limits, shape)) ?? null;
}

/** The bounds of a run of `shape` on a machine of `limits`; undefined where one is unmeasured. */
export function runBounds(limits: MachineLimits, shape: RunShape): RunBounds | undefined {
  const latency = latencyOf(limits, shape);
  const bandwidth = busbwBound(limits, shape);
  if (latency === undefined || !bandwidth) return undefined;
  return {
    fingerprint: limits.fingerprint,
    measured: limits.date,
    latency: { name: LATENCY_NAMES[shape.bounds.latency], roundTripUs: latency },
    bandwidth,
    ...(limits.sitting && { sitting: limits.sitting }),
  };
}

function latencyOf(l: MachineLimits, { bounds, procs }: RunShape): number | undefined {
  switch (bounds.latency) {
    case "cacheLine":
      return l.cacheLineRoundTripUs.median;
    case "postMessage":
      return l.postMessageRoundTripUs.median;
    case "socket":
      // Ranks that outnumber cores move bytes through Deno's reads and writes instead.
      return (procs <= l.machine.cores ? l.socketRoundTripUs : undefined)?.median ??
        l.tcpRoundTripUs?.median;
    case "device":
      return l.device?.roundTripUs.median;
  }
}

/**
 * The busbw a run can reach at each size. Its time is averaged over ranks, so it is at least the
 * group's least work (copies at a core's copy rate, reductions at its reduce rate: the work may
 * fall on a few ranks, each at most a core's rate) divided among all its ranks; ranks above the
 * cores share them. A stream's receiver copies into a window of blocks, whose bytes another copy
 * into one destination would find in its cache: its rate is the window's, where the limits hold
 * one no larger. Links and devices move every byte at their rate.
 */
function busbwBound(l: MachineLimits, { bounds, procs, busFactor, work, window }: RunShape) {
  let name: string, bytes: number[], copy: number[], reduce: number[];
  if (bounds.bandwidth === "memory") {
    const share = Math.min(1, l.machine.cores / procs);
    const stream = window !== undefined && l.copy.window && l.copy.window.blocks <= window
      ? l.copy.window
      : undefined;
    const copying = stream ?? l.copy.one;
    const medians = (curve: BandwidthCurve) => curve.gbs.map((m) => m.median);
    const reduceCurve = { name: "", bytes: l.reduce.one.bytes, gbs: medians(l.reduce.one) };
    const what = [work.copy > 0 && "copy", work.reduce > 0 && "reduce"].filter(Boolean);
    name = `a core's ${what.join(" and ")} rate${what.length > 1 ? "s" : ""}` +
      (stream ? ` into a window of ${stream.blocks} blocks` : "");
    bytes = copying.bytes;
    copy = medians(copying).map((gbs) => gbs * share);
    reduce = bytes.map((b) => bandwidthAt(reduceCurve, b) * share);
  } else {
    const rate = bounds.bandwidth === "loopback" ? l.loopbackStreamGBs : l.device?.copyGBs;
    if (!rate) return undefined;
    name = bounds.bandwidth === "loopback" ? "a loopback TCP stream" : "a device copy";
    [bytes, copy, reduce] = [[1], [rate.median], [rate.median]];
  }
  const gbs = bytes.map((_, i) =>
    busFactor * procs / (work.copy / copy[i] + work.reduce / reduce[i])
  );
  return { name, bytes, gbs };
}

/** The rank's bandwidth bound at `bytes`: log-log between measured sizes, flat beyond them. */
export function bandwidthAt(b: RunBounds["bandwidth"], bytes: number): number {
  const { bytes: at, gbs } = b;
  if (bytes <= at[0]) return gbs[0];
  if (bytes >= at.at(-1)!) return gbs.at(-1)!;
  const i = at.findIndex((x) => x >= bytes);
  const f = Math.log(bytes / at[i - 1]) / Math.log(at[i] / at[i - 1]);
  return Math.exp(Math.log(gbs[i - 1]) + f * (Math.log(gbs[i]) - Math.log(gbs[i - 1])));
}

/**
 * The share of the machine's limit a row reaches, percent: its time against the larger of the
 * floor (one way: half the round trip) and what its bus bytes take at the ceiling — so 100 is a
 * run at the limit. Neither bound is reachable exactly; a value past 100 says a bound is loose.
 */
export function pctOfLimit(
  row: Pick<ResultRow, "time_us" | "busbw_gbs" | "bytes">,
  b: RunBounds,
): number {
  const floor = b.latency.roundTripUs / 2 / row.time_us;
  const bound = bandwidthAt(b.bandwidth, row.bytes);
  return 100 * Math.max(floor, bound > 0 ? row.busbw_gbs / bound : 0);
}

/**
 * The footer's lines that read a run against the machine's limits: its peak busbw as a share of
 * the bandwidth bound, and its smallest size's time against the round trip; or, without limits,
 * how to measure them. A run past its bound or under its floor, or limits measured on a busy
 * machine, add a line saying the limits look stale and how to measure them again.
 */
export function limitLines(rows: readonly ResultRow[], b: RunBounds | undefined): string[] {
  if (!b) return ["# Limits: none measured for this machine (deno task limits measures them)"];
  if (rows.length === 0) return [];
  const peak = rows.reduce((best, r) => r.busbw_gbs > best.busbw_gbs ? r : best);
  const bound = bandwidthAt(b.bandwidth, peak.bytes);
  const small = rows.reduce((least, r) => r.bytes < least.bytes ? r : least);
  const rtt = b.latency.roundTripUs;
  const beaten = [
    peak.busbw_gbs > bound && `its peak busbw is above the bandwidth bound`,
    small.time_us < rtt / 2 &&
    `its ${small.floats}-element time is below the floor (half the ${b.latency.name})`,
  ].filter(Boolean);
  const stale = [
    ...(beaten.length > 0
      ? [
        `# Limits look stale: ${
          beaten.join(" and ")
        }; deno task limits --refresh measures them again on an idle machine`,
      ]
      : []),
    ...(b.sitting?.busy
      ? [
        `# Limits look stale: measured on a busy machine (others used ${
          Math.round(100 * Math.max(...b.sitting.load))
        }% of the CPUs); deno task limits --refresh measures them again on an idle machine`,
      ]
      : []),
  ];
  return [
    `# Peak busbw ${peak.busbw_gbs.toFixed(2)} GB/s at ${bytesName(peak.bytes)} = ` +
    `${(100 * peak.busbw_gbs / bound).toFixed(0)}% of this machine's bound, ` +
    `${bound.toFixed(2)} GB/s (${b.bandwidth.name})`,
    `# ${small.floats}-element (${bytesName(small.bytes)}) time ${small.time_us.toFixed(2)} µs = ` +
    `${(small.time_us / rtt).toFixed(1)}x the ${b.latency.name} (${rtt.toFixed(2)} µs)`,
    `# Limits: measured ${b.measured.slice(0, 10)} (machine ${b.fingerprint}; ` +
    `deno task limits --refresh measures again)`,
    ...stale,
  ];
}
