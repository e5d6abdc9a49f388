/**
 * Kept limits read back as untrusted input: a file that does not hold a sitting `deno task limits`
 * (or the page) could have measured — a field missing or of the wrong type, a value that is not a
 * finite positive number, or one no machine measures (a round trip of a femtosecond, a copy at a
 * petabyte a second), or relations between them that do not hold — is refused in one clause
 * naming the first bad field, so no run reads itself against it.
 * @module
 */

import type { MachineFacts, MachineLimits } from "./machine_limits.ts";
import type { Sampled } from "./measure.ts";

/** The range a measured value of each kind may fall in, on any machine dccl runs on. */
const PLAUSIBLE = {
  /** A round trip, µs: 5 ns (two cores sharing a cache line) to a minute. */
  us: [0.005, 60e6],
  /** A bandwidth, GB/s. */
  gbs: [0.001, 100_000],
  /** A thread's SIMD peak, GFLOP/s. */
  gflops: [0.01, 100_000],
} as const;

type Kind = keyof typeof PLAUSIBLE;

const isObject = (x: unknown): x is Record<string, unknown> =>
  typeof x === "object" && x !== null && !Array.isArray(x);
const shown = (x: unknown) => JSON.stringify(x) ?? String(x);

/** Why `m` (at `path` in the file) is not a measured value of `kind`, if it is not. */
function sampledProblem(m: unknown, path: string, kind: Kind): string | undefined {
  if (!isObject(m)) return `${path} is ${shown(m)}, not a measured value`;
  for (const field of ["median", "min", "max"] as const) {
    const v = m[field];
    if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) {
      return `${path}.${field} is ${shown(v)} (a measured value is a finite number above 0)`;
    }
    const [low, high] = PLAUSIBLE[kind];
    if (v < low || v > high) return `${path}.${field} is ${v}, outside ${low} … ${high} ${kind}`;
  }
  const { median, min, max, trials } = m as unknown as Sampled;
  if (!(min <= median && median <= max)) {
    return `${path} has min ${min}, median ${median}, max ${max} (min ≤ median ≤ max)`;
  }
  if (!Number.isInteger(trials) || trials < 1) return `${path}.trials is ${shown(trials)}`;
  return undefined;
}

/** Why `c` is not a bandwidth curve, if it is not. */
function curveProblem(c: unknown, path: string): string | undefined {
  if (!isObject(c) || !Array.isArray(c.bytes) || !Array.isArray(c.gbs)) {
    return `${path} is not a curve of sizes and bandwidths`;
  }
  const { bytes, gbs } = c as { bytes: unknown[]; gbs: unknown[] };
  if (bytes.length === 0 || bytes.length !== gbs.length) {
    return `${path} holds ${bytes.length} sizes and ${gbs.length} bandwidths (a curve holds ` +
      `one bandwidth for each of at least one size)`;
  }
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (
      !Number.isInteger(b) || (b as number) < 1 ||
      (i > 0 && (b as number) <= (bytes[i - 1] as number))
    ) {
      return `${path}.bytes[${i}] is ${shown(b)} (sizes are whole bytes, ascending)`;
    }
    const problem = sampledProblem(gbs[i], `${path}.gbs[${i}]`, "gbs");
    if (problem) return problem;
  }
  return undefined;
}

/** Why `facts` are not a machine's, if they are not. */
function factsProblem(facts: unknown): string | undefined {
  if (!isObject(facts)) return "machine is not a machine's facts";
  const { cpu, cores, runtime, version } = facts as Partial<MachineFacts>;
  if (typeof cpu !== "string" || typeof runtime !== "string" || typeof version !== "string") {
    return "machine lacks its cpu, runtime or version";
  }
  if (!Number.isInteger(cores) || cores! < 1 || cores! > 65536) {
    return `machine.cores is ${shown(cores)} (a count of logical CPUs)`;
  }
  return undefined;
}

/**
 * Why `raw` (parsed JSON) is not limits of the machine `facts`, with fingerprint `fingerprint`,
 * could have measured; undefined when it is.
 */
export function limitsProblem(
  raw: unknown,
  facts: MachineFacts,
  fingerprint: string,
): string | undefined {
  if (!isObject(raw)) return "it is not an object";
  const l = raw as Partial<MachineLimits> & Record<string, unknown>;
  if (l.format !== 1) return `format is ${shown(l.format)} (this version reads 1)`;
  if (l.fingerprint !== fingerprint) {
    return `its fingerprint ${shown(l.fingerprint)} is not this machine's (${fingerprint})`;
  }
  const problem = factsProblem(l.machine);
  if (problem) return problem;
  if (JSON.stringify(l.machine) !== JSON.stringify(facts)) return "machine is not this machine";
  if (typeof l.date !== "string" || Number.isNaN(Date.parse(l.date))) {
    return `date is ${shown(l.date)}`;
  }
  const checks: [unknown, string, Kind, boolean][] = [
    [l.cacheLineRoundTripUs, "cacheLineRoundTripUs", "us", true],
    [l.postMessageRoundTripUs, "postMessageRoundTripUs", "us", true],
    [l.socketRoundTripUs, "socketRoundTripUs", "us", false],
    [l.tcpRoundTripUs, "tcpRoundTripUs", "us", false],
    [l.loopbackStreamGBs, "loopbackStreamGBs", "gbs", false],
    [l.simdPeak?.gflops, "simdPeak.gflops", "gflops", true],
    [l.device?.copyGBs, "device.copyGBs", "gbs", l.device !== undefined],
    [l.device?.roundTripUs, "device.roundTripUs", "us", l.device !== undefined],
  ];
  for (const [value, path, kind, required] of checks) {
    if (value === undefined && !required) continue;
    const problem = sampledProblem(value, path, kind);
    if (problem) return problem;
  }
  if (!isObject(l.simdPeak) || typeof l.simdPeak.build !== "string") {
    return "simdPeak.build is missing";
  }
  for (const op of ["copy", "reduce"] as const) {
    const curves = l[op];
    if (!isObject(curves)) return `${op} is not a pair of curves`;
    for (const who of ["one", "all"] as const) {
      const problem = curveProblem(curves[who], `${op}.${who}`);
      if (problem) return problem;
    }
  }
  const window = (l.copy as Record<string, unknown>).window;
  if (window !== undefined) {
    const problem = curveProblem(window, "copy.window");
    if (problem) return problem;
    const { blocks } = window as { blocks: unknown };
    if (!Number.isInteger(blocks) || (blocks as number) < 1) {
      return `copy.window.blocks is ${shown(blocks)} (a whole number of blocks from 1)`;
    }
  }
  // Relations every sitting shows: a cache line crosses cores faster than a message does.
  if (l.cacheLineRoundTripUs!.median >= l.postMessageRoundTripUs!.median) {
    return `the cache-line round trip (${l.cacheLineRoundTripUs!.median} µs) is not below the ` +
      `postMessage round trip (${l.postMessageRoundTripUs!.median} µs)`;
  }
  if (l.sitting !== undefined && !sittingOk(l.sitting)) return `sitting is ${shown(l.sitting)}`;
  return undefined;
}

function sittingOk(s: unknown): boolean {
  if (!isObject(s)) return false;
  const { load, busy } = s;
  return Array.isArray(load) && load.every((x) => typeof x === "number" && Number.isFinite(x)) &&
    typeof busy === "boolean";
}
