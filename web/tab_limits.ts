/**
 * The tab's own limits (bench/limits): what a page's workers, shared memory, WebAssembly and
 * WebGPU allow in this browser — the same probes `deno task limits` runs, less the sockets a tab
 * has none of — and the bounds a sweep in the tab is read against.
 * @module
 */

import type { MachineFacts, MachineLimits } from "../bench/limits/machine_limits.ts";
import {
  cacheLineRoundTrip,
  deviceLimits,
  memoryBandwidth,
  postMessageRoundTrip,
  simdPeak,
  windowCopy,
} from "../bench/limits/probes.ts";
import { DEFAULT_WINDOW } from "../bench/cases.ts";
import type { TabEnvironment } from "./environment.ts";

/** Buffer sizes of the tab's bandwidths, bytes: 4 KiB to 16 MiB, every 4× (a tab's memory is its renderer's). */
const SIZES = Array.from({ length: 7 }, (_, i) => 4096 * 4 ** i);

/** The tab's facts: its platform, cores and browser version. */
export function tabFacts(env: TabEnvironment): MachineFacts {
  const chrome = env.userAgent.match(/Chrom(?:e|ium)\/([\d.]+)/)?.[1] ?? "unknown";
  return { cpu: navigator.platform, cores: env.cores, runtime: "chromium", version: chrome };
}

/** A digest of `facts`: 16 hex digits (as `deno task limits` keeps a machine's). */
export async function tabFingerprint(facts: MachineFacts): Promise<string> {
  const digest = await crypto.subtle.digest(
    "SHA-256",
    new TextEncoder().encode(JSON.stringify(facts)),
  );
  return Array.from(new Uint8Array(digest).slice(0, 8), (b) => b.toString(16).padStart(2, "0"))
    .join("");
}

/** Measures the tab's limits; the probe workers come from `probeEntry` (the page's bundle). */
export async function measureTabLimits(
  env: TabEnvironment,
  probeEntry: URL,
  progress?: (what: string) => void,
): Promise<MachineLimits> {
  const facts = tabFacts(env), options = { workerEntry: probeEntry };
  const step = async <T>(what: string, probe: () => Promise<T>) => {
    progress?.(what);
    return await probe();
  };
  const allSizes = SIZES.filter((bytes) => 3 * bytes * env.cores <= 2 ** 29);
  return {
    format: 1,
    fingerprint: await tabFingerprint(facts),
    machine: facts,
    date: new Date().toISOString(),
    cacheLineRoundTripUs: await step("cache-line round trip", () => cacheLineRoundTrip(options)),
    postMessageRoundTripUs: await step(
      "postMessage round trip",
      () => postMessageRoundTrip(options),
    ),
    copy: {
      one: await step(
        "copy, one core",
        () => memoryBandwidth(SIZES, { ...options, op: "copy", cores: 1 }),
      ),
      all: await step(
        "copy, all cores",
        () => memoryBandwidth(allSizes, { ...options, op: "copy", cores: env.cores }),
      ),
      window: await step(
        `copy into a window of ${DEFAULT_WINDOW}, one core`,
        () => windowCopy(SIZES, { ...options, blocks: DEFAULT_WINDOW, maxBytes: 2 ** 29 }),
      ),
    },
    reduce: {
      one: await step(
        "reduce, one core",
        () => memoryBandwidth(SIZES, { ...options, op: "reduce", cores: 1 }),
      ),
      all: await step(
        "reduce, all cores",
        () => memoryBandwidth(allSizes, { ...options, op: "reduce", cores: env.cores }),
      ),
    },
    simdPeak: await step("WebAssembly SIMD peak", simdPeak),
    device: env.adapter ? await step("the device", deviceLimits) : undefined,
  };
}
