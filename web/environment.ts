/**
 * What a run in a browser tab records about where it ran: the browser (user agent), its cores,
 * whether the page is cross-origin isolated (SharedArrayBuffer, hence `shm`, needs it), the
 * timer's resolution as measured, and the WebGPU adapter, if any, with whether it is a fallback
 * (software) adapter. The page says in one line what it cannot run.
 * @module
 */

import type { RunMetadata } from "../bench/report_format.ts";
import { halfKernels } from "../kernels/mod.ts";

/** The tab's facts. */
export interface TabEnvironment {
  userAgent: string;
  /** `navigator.hardwareConcurrency`. */
  cores: number;
  /** Whether SharedArrayBuffer and shared WebAssembly memory exist here. */
  crossOriginIsolated: boolean;
  /** The smallest step `performance.now()` takes here, µs (coarse where not isolated). */
  timerResolutionUs: number;
  /** The WebGPU adapter, or null with why there is none. */
  adapter: AdapterFacts | null;
  /** Why there is no adapter, when there is none. */
  noAdapter?: string;
}

/** What the page learns of its WebGPU adapter. */
export interface AdapterFacts {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  /** A software adapter (SwiftShader, llvmpipe): correct, not fast. */
  isFallbackAdapter: boolean;
}

/** The smallest nonzero step between two readings of `performance.now()`, µs. */
export function timerResolutionUs(samples = 20_000): number {
  let smallest = Infinity, last = performance.now();
  for (let i = 0; i < samples; i++) {
    const now = performance.now();
    if (now > last) smallest = Math.min(smallest, now - last);
    last = now;
  }
  return Number((smallest * 1000).toFixed(3));
}

/** This tab's facts (asks for a WebGPU adapter once). */
export async function tabEnvironment(): Promise<TabEnvironment> {
  const gpu = (navigator as Navigator & { gpu?: GPU }).gpu;
  let adapter: AdapterFacts | null = null, noAdapter: string | undefined;
  if (!gpu) noAdapter = "this browser offers no WebGPU (navigator.gpu)";
  else {
    const found = await gpu.requestAdapter().catch(() => null);
    if (!found) noAdapter = "WebGPU offers no adapter here";
    else {
      const info = found.info as GPUAdapterInfo & { isFallbackAdapter?: boolean };
      const fallback = info.isFallbackAdapter ??
        (found as GPUAdapter & { isFallbackAdapter?: boolean }).isFallbackAdapter ?? false;
      adapter = {
        vendor: info.vendor,
        architecture: info.architecture,
        device: info.device,
        description: info.description,
        isFallbackAdapter: fallback,
      };
    }
  }
  return {
    userAgent: navigator.userAgent,
    cores: navigator.hardwareConcurrency,
    crossOriginIsolated:
      (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === true,
    timerResolutionUs: timerResolutionUs(),
    adapter,
    noAdapter,
  };
}

/** The adapter as one name: its description where it gives one, else vendor and architecture. */
export function adapterName(adapter: AdapterFacts): string {
  const name = adapter.description || `${adapter.vendor} ${adapter.architecture}`.trim();
  return adapter.isFallbackAdapter ? `${name} (fallback)` : name;
}

/** What the tab cannot run, in one line each (empty when it runs everything). */
export function limits(env: TabEnvironment): string[] {
  const lines: string[] = [];
  if (!env.crossOriginIsolated) {
    lines.push(
      "This page is not cross-origin isolated (it needs Cross-Origin-Opener-Policy: same-origin " +
        "and Cross-Origin-Embedder-Policy: require-corp): no SharedArrayBuffer, so no ranks run " +
        "here; the results page still works.",
    );
  }
  if (!env.adapter) {
    lines.push(
      `No WebGPU adapter (${env.noAdapter}): the gpu transport and device memory are off.`,
    );
  } else if (env.adapter.isFallbackAdapter) {
    lines.push(
      `WebGPU runs on a fallback adapter (${adapterName(env.adapter)}): exact, not fast.`,
    );
  }
  return lines;
}

/** A run's metadata in the CLI's schema, from the tab's facts. */
export function tabMetadata(env: TabEnvironment, options: Record<string, unknown>): RunMetadata {
  const chrome = env.userAgent.match(/Chrom(?:e|ium)\/([\d.]+)/)?.[1] ?? "unknown";
  const memory = (navigator as Navigator & { deviceMemory?: number }).deviceMemory;
  return {
    tool: "dccl (browser tab)",
    deno: `chromium ${chrome}`,
    v8: chrome,
    os: navigator.platform,
    cpu: "unknown (a tab does not say)",
    halfKernels: halfKernels(),
    cpus: env.cores,
    memoryBytes: memory === undefined ? 0 : memory * 2 ** 30,
    gpuAdapter: env.adapter && adapterName(env.adapter),
    browser: env,
    date: new Date().toISOString(),
    command: [location.href],
    options,
  };
}
