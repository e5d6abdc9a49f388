/**
 * The launcher of thread transports (`gpu`): `size` logical ranks in one worker sharing one WebGPU
 * device (GPU objects cannot cross workers in Deno), each running the module's `run(comm, args)`.
 * Outcomes, blame and stragglers are handled as for worker ranks (supervisor.ts); the worker is
 * terminated whatever happens.
 * @module
 */

import { WEB_TRANSPORTS } from "../registry.ts";
import { DEFAULT_TIMEOUT_MS } from "../types.ts";
import { reportEnd } from "./rank_report.ts";
import {
  checkSize,
  deadlines,
  type GroupOptions,
  type RankGroup,
  Supervisor,
} from "./supervisor.ts";
import type { ThreadInit, ThreadReport } from "./thread_rank.ts";
import { countWorker } from "./workers.ts";
import { GpuThreads } from "./gpu_teardown.ts";

/** Options of {@linkcode launchThread}. */
export interface ThreadOptions extends GroupOptions {
  /** Largest storage binding the device kernels use, bytes (tests make it small). */
  maxBindingBytes?: number;
}

/**
 * Runs `module`'s `run(comm, args)` on `size` logical ranks of a thread transport (the table's
 * first unless told).
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { launchThread } from "./thread.ts";
 *
 * // 4 logical ranks on this machine's GPU (a software adapter will do: CI has one)
 * const module = new URL("../../examples/device_rank.ts", import.meta.url);
 * assertEquals(await launchThread<number>(module, { size: 4 }).results, [10, 10, 10, 10]);
 * ```
 */
export function launchThread<T = unknown>(
  module: URL | string,
  options: ThreadOptions,
): RankGroup<T> {
  const size = checkSize(options.size);
  const entry = options.rankEntries?.thread ?? new URL("./thread_rank.ts", import.meta.url);
  let worker: Worker | undefined = new Worker(entry, { type: "module" });
  countWorker(+1);
  const gpuThread = new GpuThreads(1);
  const supervisor = new Supervisor<T>(size, deadlines(options), {
    // The ranks share a thread: the group itself fails them all.
    relay() {},
    async stop() {
      if (worker) countWorker(-1);
      worker?.terminate();
      worker = undefined;
      options.signal?.removeEventListener("abort", onSignal);
      await gpuThread.ended(options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    },
  });
  const onSignal = () => supervisor.cancel(options.signal?.reason);
  options.signal?.addEventListener("abort", onSignal, { once: true });
  worker.onmessage = ({ data }: MessageEvent<ThreadReport>) => {
    if (data.type === "returned") supervisor.returned(data.rank);
    else supervisor.ended(data.rank, reportEnd(data));
  };
  worker.onerror = (e: ErrorEvent) => {
    e.preventDefault();
    for (let r = 0; r < size; r++) {
      supervisor.ended(r, { status: "failed", reason: `worker crashed: ${e.message}` });
    }
  };
  const init: ThreadInit = {
    type: "init",
    size,
    transport: options.transport ?? WEB_TRANSPORTS.launching("thread")[0],
    module: module.toString(),
    entry: options.entry ?? "run",
    args: options.args,
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    maxBindingBytes: options.maxBindingBytes,
    gpu: options.gpu,
    gpuThreads: gpuThread.ids,
    transportOptions: options.transportOptions,
    runtime: options.runtime?.toString(),
  };
  worker.postMessage(init);
  return {
    results: supervisor.results,
    kill(rank: number) {
      worker?.postMessage({ type: "kill", rank });
    },
  };
}
