/**
 * The launcher of workers transports (`shm`, `worker`): runs one module in `size` Web Workers
 * (SPMD), each handed a connected Communicator, and collects what each rank returns. The
 * transport's descriptor prepares what the ranks share; when a rank fails the others are told at
 * once, the rank that caused it is blamed (blame.ts), and every worker is terminated whatever
 * happens.
 * @module
 */

import { createHeapMemory } from "../memory/heap.ts";
import { WEB_TRANSPORTS } from "../registry.ts";
import { DEFAULT_TIMEOUT_MS } from "../types.ts";
import { failureReport, type RankReport, reportEnd } from "./rank_report.ts";
import { GpuThreads } from "./gpu_teardown.ts";
import {
  checkSize,
  deadlines,
  type GroupOptions,
  type RankGroup,
  Supervisor,
} from "./supervisor.ts";
import type { HierarchyPlan, PortMessage, RankInit } from "./worker_rank.ts";

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
 * This process's part of a hierarchical group (hierarchy.ts): it runs its ranks as workers
 * sharing memory, linked to the other processes' ranks over `transport` (a processes transport).
 */
export interface HostPart extends HierarchyPlan {
  /** The processes transport linking the processes. */
  transport: string;
  /** Where these ranks sit among the ranks this machine runs, when the launcher says it. */
  cpus?: { first: number; of: number };
  /** Hears every report of every rank (a process rank relays them to its launcher). */
  onReport?: (rank: number, report: RankReport) => void;
  /** Hears the port rank 0 picked, when `mesh.masterPort` is 0 (its launcher waits for it). */
  onPort?: (port: number) => void;
}

/**
 * Runs `module`'s `run(comm, args)` on `size` ranks of a workers transport (the table's first
 * unless told), or, with `options.host`, on this process's `host.threads` ranks of a hierarchical
 * group (which share memory over the table's first transport that offers it).
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { launchWorkers } from "./workers.ts";
 *
 * const module = new URL("../../examples/allreduce_rank.ts", import.meta.url);
 * const group = launchWorkers<number>(module, { size: 4, transport: "worker" });
 * assertEquals(await group.results, [10, 10, 10, 10]);
 * ```
 */
export function launchWorkers<T = unknown>(
  module: URL | string,
  options: GroupOptions & { host?: HostPart },
): RankGroup<T> {
  const host = options.host;
  const size = checkSize(host?.threads ?? options.size);
  // Rank of worker w: w, or its rank in the hierarchical group.
  const rankOf = (w: number) => host ? host.host * host.threads + w : w;
  const ranks = Array.from({ length: size }, (_, w) => rankOf(w));
  const transport = host?.transport ?? options.transport ?? WEB_TRANSPORTS.launching("workers")[0];
  const shared = WEB_TRANSPORTS.sharedMemory().name;
  if (options.progress === "thread" && (host || options.gpu || transport !== shared)) {
    throw new RangeError(
      `a progress thread runs a rank of ${shared} on host buffers: not of ${transport}, of a ` +
        "hierarchical group, or with a WebGPU device",
    );
  }
  const prepared =
    (host ? WEB_TRANSPORTS.sharedMemory() : WEB_TRANSPORTS.launchedAs(transport, "workers"))
      .prepare(size);
  const heaps = Array.from({ length: size }, () => createHeapMemory());
  const gpuThreads = options.gpu ? new GpuThreads(size) : undefined;
  const workers: (Worker | undefined)[] = [];
  const terminate = (w: number) => {
    workers[w]?.terminate();
    if (workers[w]) live--;
    workers[w] = undefined;
  };
  const supervisor = new Supervisor<T>(ranks, deadlines(options), {
    relay(failedRank, reason) {
      prepared.abort?.(failedRank, reason);
      workers.forEach((w) => w?.postMessage({ type: "abort", failedRank, reason }));
    },
    async stop() {
      workers.forEach((_, w) => terminate(w));
      options.signal?.removeEventListener("abort", onSignal);
      await gpuThreads?.ended(options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    },
  });
  // An abort is not a rank failure: terminating every worker is the whole teardown.
  const onSignal = () => supervisor.cancel(options.signal?.reason);
  options.signal?.addEventListener("abort", onSignal, { once: true });

  // Rank 0 of a hierarchical group may pick its port: the host's other ranks start once it has.
  const picksPort = host !== undefined && host.host === 0 && host.mesh.masterPort === 0;
  const start = (w: number, masterPort?: number) => {
    const rank = rankOf(w);
    const entry = options.rankEntries?.workers ?? new URL("./worker_rank.ts", import.meta.url);
    const worker = new Worker(entry, { type: "module" });
    live++;
    workers[w] = worker;
    worker.onmessage = (e: MessageEvent<RankReport | PortMessage>) => {
      if (e.data.type === "port") {
        host!.onPort?.(e.data.port);
        for (let other = 1; other < size; other++) start(other, e.data.port);
        return;
      }
      host?.onReport?.(rank, e.data);
      if (e.data.type === "returned") supervisor.returned(rank);
      else supervisor.ended(rank, reportEnd(e.data));
    };
    worker.onerror = (e: ErrorEvent) => {
      e.preventDefault();
      const report = { type: "error", ...failureReport(new Error(`worker crashed: ${e.message}`)) };
      host?.onReport?.(rank, report as RankReport);
      supervisor.ended(rank, { status: "failed", reason: `worker crashed: ${e.message}` });
    };
    const { handed, transfer } = prepared.forRank(w);
    const init: RankInit = {
      type: "init",
      rank,
      slot: w,
      size: host ? host.hosts * host.threads : size,
      transport,
      module: module.toString(),
      entry: options.entry ?? "run",
      args: options.args,
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      gpu: options.gpu ?? false,
      gpuThreads: gpuThreads?.ids,
      progress: options.progress === "thread" || undefined,
      heaps,
      handed,
      cpu: host
        ? host.cpus && options.placement?.(host.cpus.first + w, host.cpus.of)
        : options.placement?.(w, size),
      runtime: options.runtime?.toString(),
      hierarchy: host && {
        hosts: host.hosts,
        threads: host.threads,
        host: host.host,
        mesh: { ...host.mesh, masterPort: masterPort ?? host.mesh.masterPort },
        machineRanks: host.cpus?.of,
      },
    };
    worker.postMessage(init, transfer);
  };
  for (let w = 0; w < (picksPort ? 1 : size); w++) start(w);

  return {
    results: supervisor.results,
    kill(rank: number) {
      const w = ranks.indexOf(rank);
      if (!workers[w]) return;
      terminate(w);
      supervisor.ended(rank, { status: "killed", reason: "worker was terminated" });
    },
  };
}
