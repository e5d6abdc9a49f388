/**
 * The launcher of workers transports (`shm`, `worker`): runs one module in `size` Web Workers
 * (SPMD), each handed a connected Communicator, and collects what each rank returns. The
 * transport's descriptor prepares what the ranks share; when a rank fails the others are told at
 * once, the rank that caused it is blamed (verdict.ts), and every worker is terminated whatever
 * happens.
 * @module
 */

import { createHeapMemory } from "../memory/heap.ts";
import { cpuForSlot } from "./cpu_binding.ts";
import { launchedAs, transportsLaunching } from "../registry.ts";
import { DEFAULT_TIMEOUT_MS } from "../types.ts";
import { type RankReport, reportEnd } from "./report.ts";
import {
  checkSize,
  deadlines,
  type GroupOptions,
  type RankGroup,
  Supervisor,
} from "./supervisor.ts";
import type { RankInit } from "./worker_rank.ts";

/**
 * Milliseconds to keep the process alive after terminating workers that hold WebGPU devices: on
 * Mesa's GL backend a process that exits while a terminated worker still tears its device down
 * corrupts the heap (docs/design.md, "WebGPU").
 */
export const GPU_TEARDOWN_MS = 250;

/** Resolves once terminated GPU workers have had time to tear down (see GPU_TEARDOWN_MS). */
export function gpuTeardown(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, GPU_TEARDOWN_MS));
}

let live = 0;
/** Workers started by the launchers that are still running (for leak checks). */
export function liveWorkers(): number {
  return live;
}

/** Counts a worker started (+1) or terminated (−1) by a launcher. */
export function countWorker(delta: number): void {
  live += delta;
}

/**
 * Runs `module`'s `run(comm, args)` on `size` ranks of a workers transport (the registry's first
 * unless told).
 *
 * @example
 * ```ts ignore
 * const group = launchWorkers(new URL("./rank_main.ts", import.meta.url), { size: 4 });
 * const sums = await group.results;
 * ```
 */
export function launchWorkers<T = unknown>(
  module: URL | string,
  options: GroupOptions,
): RankGroup<T> {
  const size = checkSize(options.size);
  const transport = options.transport ?? transportsLaunching("workers")[0];
  const prepared = launchedAs(transport, "workers").prepare(size);
  const heaps = Array.from({ length: size }, () => createHeapMemory());
  const workers: (Worker | undefined)[] = [];
  const terminate = (rank: number) => {
    workers[rank]?.terminate();
    if (workers[rank]) live--;
    workers[rank] = undefined;
  };
  const supervisor = new Supervisor<T>(size, deadlines(options), {
    relay(failedRank, reason) {
      prepared.abort?.(failedRank, reason);
      workers.forEach((w) => w?.postMessage({ type: "abort", failedRank, reason }));
    },
    async stop() {
      workers.forEach((_, r) => terminate(r));
      options.signal?.removeEventListener("abort", onSignal);
      if (options.gpu) await gpuTeardown();
    },
  });
  // An abort is not a rank failure: terminating every worker is the whole teardown.
  const onSignal = () => supervisor.cancel(options.signal?.reason);
  options.signal?.addEventListener("abort", onSignal, { once: true });

  for (let rank = 0; rank < size; rank++) {
    const worker = new Worker(new URL("./worker_rank.ts", import.meta.url), { type: "module" });
    live++;
    workers.push(worker);
    worker.onmessage = (e: MessageEvent<RankReport>) => {
      if (e.data.type === "returned") supervisor.returned(rank);
      else supervisor.ended(rank, reportEnd(e.data));
    };
    worker.onerror = (e: ErrorEvent) => {
      e.preventDefault();
      supervisor.ended(rank, { status: "failed", reason: `worker crashed: ${e.message}` });
    };
    const { handed, transfer } = prepared.forRank(rank);
    const init: RankInit = {
      type: "init",
      rank,
      size,
      transport,
      module: module.toString(),
      entry: options.entry ?? "run",
      args: options.args,
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      gpu: options.gpu ?? false,
      heaps,
      handed,
      cpu: cpuForSlot(rank, size),
    };
    worker.postMessage(init, transfer);
  }

  return {
    results: supervisor.results,
    kill(rank: number) {
      if (!workers[rank]) return;
      terminate(rank);
      supervisor.ended(rank, { status: "killed", reason: "worker was terminated" });
    },
  };
}
