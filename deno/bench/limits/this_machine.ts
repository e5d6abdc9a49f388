/**
 * This machine's limits (bench/limits): measured by `deno task limits`, kept per machine under
 * the user's cache folder by a fingerprint of the CPU model, its cores and the runtime's version,
 * and read back by every run, whose rows and footer are then read against them.
 * @module
 */

import { createHash } from "node:crypto";
import { join } from "node:path";
import type { MachineFacts, MachineLimits } from "../../../bench/limits/machine_limits.ts";
import {
  cacheLineRoundTrip,
  deviceLimits,
  memoryBandwidth,
  postMessageRoundTrip,
  simdPeak,
} from "../../../bench/limits/probes.ts";
import { writeAtomically } from "../../files/atomic_file.ts";
import { loopbackLimits } from "./loopback.ts";

/** The CPU's model (`/proc/cpuinfo`), or the architecture where it does not say. */
export function cpuModel(): string {
  try {
    const info = Deno.readTextFileSync("/proc/cpuinfo");
    return info.match(/^model name\s*:\s*(.+)$/m)?.[1] ?? Deno.build.arch;
  } catch {
    return Deno.build.arch;
  }
}

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

/** Measures every limit of this machine (`progress` hears each one's name as it starts). */
export async function measureLimits(progress?: (what: string) => void): Promise<MachineLimits> {
  const facts = machineFacts();
  const step = async <T>(what: string, probe: () => Promise<T>): Promise<T> => {
    progress?.(what);
    return await probe();
  };
  const cores = facts.cores;
  // All cores at once hold three buffers each: at most 1 GiB in all.
  const allSizes = SIZES.filter((bytes) => 3 * bytes * cores <= 2 ** 30);
  const loopback = await step("loopback TCP", loopbackLimits);
  return {
    format: 1,
    fingerprint: fingerprintOf(facts),
    machine: facts,
    date: new Date().toISOString(),
    cacheLineRoundTripUs: await step("cache-line round trip", () => cacheLineRoundTrip()),
    postMessageRoundTripUs: await step("postMessage round trip", () => postMessageRoundTrip()),
    socketRoundTripUs: loopback.socketRoundTripUs,
    tcpRoundTripUs: loopback.tcpRoundTripUs,
    loopbackStreamGBs: loopback.streamGBs,
    copy: {
      one: await step("copy, one core", () => memoryBandwidth(SIZES, { op: "copy", cores: 1 })),
      all: await step(
        `copy, ${cores} cores`,
        () => memoryBandwidth(allSizes, { op: "copy", cores: cores }),
      ),
    },
    reduce: {
      one: await step("reduce, one core", () => memoryBandwidth(SIZES, { op: "reduce", cores: 1 })),
      all: await step(
        `reduce, ${cores} cores`,
        () => memoryBandwidth(allSizes, { op: "reduce", cores: cores }),
      ),
    },
    simdPeak: await step("WebAssembly SIMD peak", simdPeak),
    device: await step("the device", deviceLimits),
  };
}

/** Where the limits of `facts` (this machine's unless given) are kept, if there is a cache folder. */
export function limitsPath(facts = machineFacts()): string | undefined {
  const folder = limitsFolder();
  return folder && join(folder, `${fingerprintOf(facts)}.json`);
}

/**
 * The kept limits of `facts` (this machine's unless given: a browser's on it, say), or undefined
 * when none were measured (or they do not read).
 */
export function keptLimits(facts = machineFacts()): MachineLimits | undefined {
  const path = limitsPath(facts);
  if (!path) return undefined;
  try {
    const limits = JSON.parse(Deno.readTextFileSync(path)) as MachineLimits;
    const whole = limits?.format === 1 && limits.fingerprint === fingerprintOf(facts) &&
      typeof limits.cacheLineRoundTripUs?.median === "number" &&
      Array.isArray(limits.copy?.one?.gbs);
    return whole ? limits : undefined;
  } catch {
    return undefined;
  }
}

/** Keeps `limits` under their machine's fingerprint; returns where. */
export function keepLimits(limits: MachineLimits): string {
  const path = limitsPath(limits.machine);
  if (!path) throw new Error("neither XDG_CACHE_HOME nor HOME is set: nowhere to keep the limits");
  Deno.mkdirSync(join(path, ".."), { recursive: true });
  writeAtomically(path, JSON.stringify(limits, null, 1));
  return path;
}
