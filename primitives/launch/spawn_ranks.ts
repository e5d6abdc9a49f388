/**
 * The in-process launcher: runs one module in `size` Web Workers (SPMD), each handed a connected
 * Communicator, and collects what each rank returns. When a rank fails the others are told at
 * once, the rank that caused it is blamed (primitives/launch/verdict.ts), and every worker is
 * terminated whatever happens.
 * @module
 */

import { createHeapMemory } from "../memory/heap.ts";
import { DEFAULT_TIMEOUT_MS, type TransportName } from "../types.ts";
import type { RankInit } from "./rank_worker.ts";
import { type RankReport, reportEnd } from "./report.ts";
import { createShmSetup, raiseAbort } from "../transports/shm_layout.ts";
import { FAILURE_GRACE_MS, Supervisor } from "./supervisor.ts";

/** Options of {@linkcode spawnRanks}. */
export interface SpawnOptions {
  /** Number of ranks. */
  size: number;
  /** In-process transport. @default {"shm"} */
  transport?: Extract<TransportName, "shm" | "worker">;
  /** Milliseconds an operation may wait without progress before it fails. @default {30000} */
  timeoutMs?: number;
  /**
   * Milliseconds the other ranks have to finish once one has returned; a rank still running then
   * is stuck (the group fails, naming it). The default outlasts the ranks' own timeouts, so a
   * rank waiting for one that skipped a call reports that first. @default {timeoutMs + 2000}
   */
  stragglerMs?: number;
  /** Open a WebGPU device in every rank, for `gpu` and `managed` memory. @default {false} */
  gpu?: boolean;
  /** Name of the exported function each rank runs as `fn(comm, args)`. @default {"run"} */
  entry?: string;
  /** Passed, structured-cloned, to every rank's function. */
  args?: unknown;
  /** Aborting terminates every rank and rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** A running group of ranks. */
export interface RankGroup<T> {
  /**
   * Every rank's return value, by rank; rejects with a `RankFailedError` naming the rank that
   * caused the failure, with how every rank ended in its `outcomes`.
   */
  readonly results: Promise<T[]>;
  /** Terminates one rank, as if it had died. */
  kill(rank: number): void;
}

export { FAILURE_GRACE_MS };

/**
 * Milliseconds to keep the process alive after terminating workers that hold WebGPU devices.
 * On Mesa's GL backend the devices of one process share an EGL display, and a process that exits
 * while a terminated worker still tears its device down corrupts the heap (seen in 10–30% of
 * runs; none in 20 with a 50 ms wait).
 */
export const GPU_TEARDOWN_MS = 250;

/** Resolves once terminated GPU workers have had time to tear down (see GPU_TEARDOWN_MS). */
export function gpuTeardown(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, GPU_TEARDOWN_MS));
}

let live = 0;
/** Workers started by this module that are still running (for leak checks). */
export function liveWorkers(): number {
  return live;
}

/** Counts a worker started (+1) or terminated (−1) by a launcher. */
export function countWorker(delta: number): void {
  live += delta;
}

/**
 * Runs `module`'s `run(comm, args)` on `size` ranks and resolves with their return values.
 *
 * @example
 * ```ts ignore
 * const sums = await spawnRanks(new URL("./rank_main.ts", import.meta.url), { size: 4 });
 * ```
 */
export function spawnRanks<T = unknown>(module: URL | string, options: SpawnOptions): Promise<T[]> {
  return startRanks<T>(module, options).results;
}

/** Like {@linkcode spawnRanks}, but returns a handle that can also kill a rank. */
export function startRanks<T = unknown>(module: URL | string, options: SpawnOptions): RankGroup<T> {
  const size = checkSize(options.size);
  const transport = options.transport ?? "shm";
  if (transport !== "shm" && transport !== "worker") {
    throw new RangeError(`Unknown in-process transport ${transport}: expected shm or worker`);
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const heaps = Array.from({ length: size }, () => createHeapMemory());
  const shm = transport === "shm" ? createShmSetup(size) : undefined;
  const ports = meshPorts(size, transport === "worker");
  const workers: (Worker | undefined)[] = [];
  const terminate = (rank: number) => {
    workers[rank]?.terminate();
    if (workers[rank]) live--;
    workers[rank] = undefined;
  };
  const supervisor = new Supervisor<T>(size, {
    graceMs: Math.min(FAILURE_GRACE_MS, timeoutMs),
    stragglerMs: options.stragglerMs ?? timeoutMs + FAILURE_GRACE_MS,
  }, {
    relay(failedRank, reason) {
      if (shm) raiseAbort(shm.control, size, failedRank, reason);
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
    const worker = new Worker(new URL("./rank_worker.ts", import.meta.url), { type: "module" });
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
    const init: RankInit = {
      type: "init",
      rank,
      size,
      transport,
      module: module.toString(),
      entry: options.entry ?? "run",
      args: options.args,
      timeoutMs,
      gpu: options.gpu ?? false,
      heaps,
      shm,
      ports: ports[rank],
    };
    worker.postMessage(init, ports[rank].filter((p): p is MessagePort => p !== undefined));
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

/** `size` if it is a group size. */
export function checkSize(size: number): number {
  if (!Number.isInteger(size) || size < 1) {
    throw new RangeError(`Invalid size ${size}: a group needs an integer ≥ 1 ranks`);
  }
  return size;
}

/** `ports[r][p]`: rank r's end of the channel to rank p (none when `wanted` is false). */
function meshPorts(size: number, wanted: boolean): (MessagePort | undefined)[][] {
  const ports = Array.from({ length: size }, () => new Array<MessagePort | undefined>(size));
  if (!wanted) return ports;
  for (let a = 0; a < size; a++) {
    for (let b = a + 1; b < size; b++) {
      const channel = new MessageChannel();
      ports[a][b] = channel.port1;
      ports[b][a] = channel.port2;
    }
  }
  return ports;
}
