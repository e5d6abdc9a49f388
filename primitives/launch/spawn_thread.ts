/**
 * The launcher of the `gpu` transport: `size` logical ranks in one worker sharing one WebGPU
 * device (GPU objects cannot cross workers in Deno), each running the module's `run(comm, args)`.
 * Outcomes, blame and stragglers are handled as for worker ranks (supervisor.ts); the worker is
 * terminated whatever happens.
 * @module
 */

import { DEFAULT_TIMEOUT_MS } from "../types.ts";
import { reportEnd } from "./report.ts";
import { checkSize, countWorker, gpuTeardown, type RankGroup } from "./spawn_ranks.ts";
import { FAILURE_GRACE_MS, Supervisor } from "./supervisor.ts";
import type { ThreadInit, ThreadReport } from "./thread_worker.ts";

/** Options of {@linkcode startThreadRanks}. */
export interface ThreadOptions {
  /** Number of logical ranks. */
  size: number;
  /** Milliseconds a call may wait for the other ranks to join. @default {30000} */
  timeoutMs?: number;
  /** Milliseconds the other ranks have once one has returned. @default {timeoutMs + 2000} */
  stragglerMs?: number;
  /** Name of the exported function each rank runs as `fn(comm, args)`. @default {"run"} */
  entry?: string;
  /** Passed, structured-cloned, to every rank's function. */
  args?: unknown;
  /** Aborting terminates the group and rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Largest storage binding the device kernels use, bytes (tests make it small). */
  maxBindingBytes?: number;
}

/**
 * Runs `module`'s `run(comm, args)` on `size` logical ranks of the `gpu` transport.
 *
 * @example
 * ```ts ignore
 * const sums = await startThreadRanks(new URL("./rank_main.ts", import.meta.url), { size: 4 })
 *   .results;
 * ```
 */
export function startThreadRanks<T = unknown>(
  module: URL | string,
  options: ThreadOptions,
): RankGroup<T> {
  const size = checkSize(options.size);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  let worker: Worker | undefined = new Worker(
    new URL("./thread_worker.ts", import.meta.url),
    { type: "module" },
  );
  countWorker(+1);
  const supervisor = new Supervisor<T>(size, {
    graceMs: Math.min(FAILURE_GRACE_MS, timeoutMs),
    stragglerMs: options.stragglerMs ?? timeoutMs + FAILURE_GRACE_MS,
  }, {
    // The ranks share a thread: the group itself fails them all.
    relay() {},
    async stop() {
      if (worker) countWorker(-1);
      worker?.terminate();
      worker = undefined;
      options.signal?.removeEventListener("abort", onSignal);
      await gpuTeardown();
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
    module: module.toString(),
    entry: options.entry ?? "run",
    args: options.args,
    timeoutMs,
    maxBindingBytes: options.maxBindingBytes,
  };
  worker.postMessage(init);
  return {
    results: supervisor.results,
    kill(rank: number) {
      worker?.postMessage({ type: "kill", rank });
    },
  };
}
