/** Run metadata for the JSON sidecar: Deno, CPU, GPU adapter, date, command line. @module */

import type { RunMetadata } from "../../bench/report_format.ts";
import { cpuModel } from "./cpu_model.ts";

/** Describes this machine and run. */
export async function collectMetadata(
  argv: string[],
  options: Record<string, unknown>,
): Promise<RunMetadata> {
  return {
    tool: "dccl",
    deno: Deno.version.deno,
    v8: Deno.version.v8,
    os: `${Deno.build.os} ${Deno.osRelease()} ${Deno.build.arch}`,
    cpu: cpuModel(),
    cpus: navigator.hardwareConcurrency,
    memoryBytes: Deno.systemMemoryInfo().total,
    gpuAdapter: await gpuAdapter(),
    date: new Date().toISOString(),
    command: argv,
    options,
  };
}

/** The WebGPU adapter's description, or null without one (never waits more than 3 s). */
async function gpuAdapter(): Promise<string | null> {
  const gpu = (navigator as { gpu?: GPU }).gpu;
  if (!gpu) return null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<null>((resolve) => timer = setTimeout(() => resolve(null), 3000));
  try {
    const adapter = await Promise.race([gpu.requestAdapter(), timeout]);
    if (!adapter) return null;
    const i = adapter.info;
    return i.description || i.device || i.architecture || "unnamed adapter";
  } catch {
    return null;
  } finally {
    clearTimeout(timer);
  }
}
