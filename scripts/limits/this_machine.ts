/**
 * This machine's limits (bench/limits): measured by `deno task limits`, kept per machine under
 * the user's cache folder by a fingerprint of the CPU model, its cores and the runtime's version,
 * and read back by every run, whose rows and footer are then read against them.
 * @module
 */

import { createHash } from "node:crypto";
import { join } from "node:path";
import {
  BUSY_SHARE,
  type MachineFacts,
  type MachineLimits,
} from "../../bench/limits/machine_limits.ts";
import { limitsProblem } from "../../bench/limits/limits_check.ts";
import { timeLeft } from "../../bench/progress.ts";
import {
  cacheLineRoundTrip,
  deviceLimits,
  memoryBandwidth,
  postMessageRoundTrip,
  simdPeak,
  windowCopy,
} from "../../bench/limits/probes.ts";
import { DEFAULT_WINDOW } from "../../bench/cases.ts";
import { cpuModel } from "../common/cpu_model.ts";
import { writeAtomically } from "../../deno/mod.ts";
import { PlainFileError, readPlainFile } from "../../deno/mod.ts";
import { loopbackLimits } from "./loopback.ts";

/** What the limits of this machine are kept by. */
export function machineFacts(): MachineFacts {
  return {
    cpu: cpuModel(),
    cores: navigator.hardwareConcurrency,
    runtime: "deno",
    version: `${Deno.version.deno} (V8 ${Deno.version.v8})`,
  };
}

/** A digest of `facts`: 16 hex digits. */
export function fingerprintOf(facts: MachineFacts): string {
  return createHash("sha256").update(JSON.stringify(facts)).digest("hex").slice(0, 16);
}

/** The folder the limits are kept in: `$XDG_CACHE_HOME/dccl/limits` (or `~/.cache/…`). */
export function limitsFolder(): string | undefined {
  const get = (name: string) => {
    try {
      return Deno.env.get(name);
    } catch {
      return undefined;
    }
  };
  const cache = get("XDG_CACHE_HOME") || (get("HOME") && join(get("HOME")!, ".cache"));
  return cache ? join(cache, "dccl", "limits") : undefined;
}

/** Buffer sizes the bandwidths are measured at, bytes: 4 KiB to 64 MiB, every 4×. */
const SIZES = Array.from({ length: 8 }, (_, i) => 4096 * 4 ** i);

/**
 * The share of a sitting each step takes, from an idle sitting of the development machine
 * (docs/measuring.md): the time left is the sitting's pace so far applied to what remains.
 */
const STEP_SHARE = {
  loopback: 18,
  cacheLine: 4,
  postMessage: 4,
  copyOne: 14,
  copyAll: 14,
  copyWindow: 10,
  reduceOne: 14,
  reduceAll: 14,
  simd: 6,
  device: 12,
};
const TOTAL_SHARE = Object.values(STEP_SHARE).reduce((a, b) => a + b, 0);

/** One step of a sitting, as its progress says it: what, and how far along with how long left. */
export interface LimitsStep {
  what: string;
  /** `step 3 of 9, ETA 2m10s` */
  where: string;
}

/**
 * The share of this machine's CPUs that other processes use over `ms` while this one waits
 * (/proc/stat); where the system does not say, the 1-minute load average per core.
 */
export async function othersShare(ms = 1000): Promise<number> {
  const read = () => {
    const cpu = Deno.readTextFileSync("/proc/stat").split("\n")[0].split(/\s+/).slice(1, 9)
      .map(Number);
    // user nice system idle iowait irq softirq steal: idle and iowait are time nobody ran.
    return { total: cpu.reduce((a, b) => a + b, 0), idle: cpu[3] + cpu[4] };
  };
  try {
    const before = read();
    await new Promise((r) => setTimeout(r, ms));
    const after = read();
    const total = after.total - before.total;
    return total > 0 ? Math.max(0, 1 - (after.idle - before.idle) / total) : 0;
  } catch {
    return Deno.loadavg()[0] / navigator.hardwareConcurrency;
  }
}

/** Measures every limit of this machine (`progress` hears each step as it starts). */
export async function measureLimits(progress?: (step: LimitsStep) => void): Promise<MachineLimits> {
  const facts = machineFacts();
  const started = performance.now();
  let done = 0, index = 0;
  const steps = Object.keys(STEP_SHARE).length;
  const step = async <T>(
    what: string,
    share: keyof typeof STEP_SHARE,
    probe: () => Promise<T>,
  ): Promise<T> => {
    const eta = timeLeft(performance.now() - started, done / TOTAL_SHARE);
    progress?.({ what, where: `step ${++index} of ${steps}${eta ? `, ${eta}` : ""}` });
    const result = await probe();
    done += STEP_SHARE[share];
    return result;
  };
  const cores = facts.cores;
  // All cores at once hold three buffers each: at most 1 GiB in all.
  const allSizes = SIZES.filter((bytes) => 3 * bytes * cores <= 2 ** 30);
  const before = await othersShare();
  const loopback = await step("loopback TCP", "loopback", loopbackLimits);
  const limits: MachineLimits = {
    format: 1,
    fingerprint: fingerprintOf(facts),
    machine: facts,
    date: new Date().toISOString(),
    cacheLineRoundTripUs: await step(
      "cache-line round trip",
      "cacheLine",
      () => cacheLineRoundTrip(),
    ),
    postMessageRoundTripUs: await step(
      "postMessage round trip",
      "postMessage",
      () => postMessageRoundTrip(),
    ),
    socketRoundTripUs: loopback.socketRoundTripUs,
    tcpRoundTripUs: loopback.tcpRoundTripUs,
    loopbackStreamGBs: loopback.streamGBs,
    copy: {
      one: await step(
        "copy, one core",
        "copyOne",
        () => memoryBandwidth(SIZES, { op: "copy", cores: 1 }),
      ),
      all: await step(
        `copy, ${cores} cores`,
        "copyAll",
        () => memoryBandwidth(allSizes, { op: "copy", cores: cores }),
      ),
      window: await step(
        `copy into a window of ${DEFAULT_WINDOW}, one core`,
        "copyWindow",
        () => windowCopy(SIZES, { blocks: DEFAULT_WINDOW, maxBytes: 2 ** 30 }),
      ),
    },
    reduce: {
      one: await step(
        "reduce, one core",
        "reduceOne",
        () => memoryBandwidth(SIZES, { op: "reduce", cores: 1 }),
      ),
      all: await step(
        `reduce, ${cores} cores`,
        "reduceAll",
        () => memoryBandwidth(allSizes, { op: "reduce", cores: cores }),
      ),
    },
    simdPeak: await step("WebAssembly SIMD peak", "simd", simdPeak),
    device: await step("the device", "device", deviceLimits),
  };
  const after = await othersShare();
  limits.sitting = {
    load: [before, after].map((x) => Number(x.toFixed(3))),
    busy: Math.max(before, after) > BUSY_SHARE,
  };
  return limits;
}

/** Where the limits of `facts` (this machine's unless given) are kept, if there is a cache folder. */
export function limitsPath(facts = machineFacts()): string | undefined {
  const folder = limitsFolder();
  return folder && join(folder, `${fingerprintOf(facts)}.json`);
}

/** Kept limits that cannot be read as limits: one line naming the file and the way out. */
export class LimitsFileError extends Error {
  override name = "LimitsFileError";
}

/** The most a limits file holds: a few KB in practice. */
const MAX_LIMITS_BYTES = 1 << 20;

/**
 * The kept limits of `facts` (this machine's unless given: a browser's on it, say), or undefined
 * when none were measured. A file there that is not a plain file, or does not hold limits this
 * machine could have measured (bench/limits/limits_check.ts), is a {@linkcode LimitsFileError}
 * naming it and `deno task limits --refresh`.
 */
export function keptLimits(facts = machineFacts()): MachineLimits | undefined {
  const path = limitsPath(facts);
  if (!path) return undefined;
  const refused = (why: string) =>
    new LimitsFileError(
      `${path} holds no limits this run can read against (${why}): deno task limits --refresh ` +
        `measures them again`,
    );
  let bytes: Uint8Array | undefined;
  try {
    bytes = readPlainFile(path, { maxBytes: MAX_LIMITS_BYTES });
  } catch (e) {
    throw e instanceof PlainFileError ? refused(e.message.replace(`${path} `, "it ")) : e;
  }
  if (!bytes) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw refused("it is not JSON");
  }
  const problem = limitsProblem(raw, facts, fingerprintOf(facts));
  if (problem) throw refused(problem);
  return raw as MachineLimits;
}

/** Keeps `limits` under their machine's fingerprint; returns where. */
export function keepLimits(limits: MachineLimits): string {
  const path = limitsPath(limits.machine);
  if (!path) throw new Error("neither XDG_CACHE_HOME nor HOME is set: nowhere to keep the limits");
  Deno.mkdirSync(join(path, ".."), { recursive: true });
  writeAtomically(path, JSON.stringify(limits, null, 1));
  return path;
}
