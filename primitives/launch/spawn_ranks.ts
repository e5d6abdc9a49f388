/**
 * The in-process launcher: runs one module in `size` Web Workers (SPMD), each handed a connected
 * Communicator, and collects what each rank returns. The first rank to fail aborts the others,
 * and every worker is terminated whatever happens.
 * @module
 */

import { RankFailedError } from "../errors.ts";
import { createHeapMemory } from "../memory/heap.ts";
import type { TransportName } from "../types.ts";
import type { RankInit, RankReport } from "./rank_worker.ts";
import { createShmSetup, raiseAbort } from "../transports/shm_layout.ts";

/** Options of {@linkcode spawnRanks}. */
export interface SpawnOptions {
  /** Number of ranks. */
  size: number;
  /** In-process transport. @default {"shm"} */
  transport?: Extract<TransportName, "shm" | "worker">;
  /** Milliseconds an operation may wait without progress before it fails. @default {30000} */
  timeoutMs?: number;
  /** Name of the exported function each rank runs as `fn(comm, args)`. @default {"run"} */
  entry?: string;
  /** Passed, structured-cloned, to every rank's function. */
  args?: unknown;
  /** Aborting terminates every rank and rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** A running group of ranks. */
export interface RankGroup<T> {
  /** Every rank's return value, by rank; rejects with the first rank's failure. */
  readonly results: Promise<T[]>;
  /** Terminates one rank's worker, as if it had died. */
  kill(rank: number): void;
}

let live = 0;
/** Workers started by this module that are still running (for leak checks). */
export function liveWorkers(): number {
  return live;
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
  const size = options.size;
  if (!Number.isInteger(size) || size < 1) {
    throw new RangeError(`Invalid size ${size}: a group needs an integer ≥ 1 ranks`);
  }
  const transport = options.transport ?? "shm";
  if (transport !== "shm" && transport !== "worker") {
    throw new RangeError(`Unknown in-process transport ${transport}: expected shm or worker`);
  }
  const timeoutMs = options.timeoutMs ?? 30_000;
  const heaps = Array.from({ length: size }, () => createHeapMemory());
  const shm = transport === "shm" ? createShmSetup(size) : undefined;
  const ports = meshPorts(size, transport === "worker");
  const workers: (Worker | undefined)[] = [];
  const results: T[] = new Array(size);
  let pending = size;
  let failure: RankFailedError | undefined;
  let settle!: { resolve: (v: T[]) => void; reject: (e: unknown) => void };
  const done = new Promise<T[]>((resolve, reject) => settle = { resolve, reject });

  const terminateAll = () => {
    workers.forEach((w, r) => {
      if (w) {
        w.terminate();
        live--;
        workers[r] = undefined;
      }
    });
  };
  const finishIfSettled = () => {
    if (pending > 0) return;
    terminateAll();
    options.signal?.removeEventListener("abort", onSignal);
    if (failure) settle.reject(failure);
    else settle.resolve(results);
  };
  const fail = (rank: number, message: string, cause?: unknown) => {
    if (!failure) {
      failure = new RankFailedError(rank, message, cause);
      if (shm) raiseAbort(shm.control, size, rank);
      workers.forEach((w) => w?.postMessage({ type: "abort", failedRank: rank, reason: message }));
      // Ranks stuck in user code never report; do not wait for them forever.
      const grace = setTimeout(() => {
        pending = 0;
        finishIfSettled();
      }, Math.min(2000, timeoutMs));
      Deno.unrefTimer(grace);
    }
  };
  // An abort is not a rank failure: terminating every worker is the whole teardown.
  const onSignal = () => {
    pending = 0;
    terminateAll();
    settle.reject(options.signal?.reason);
  };
  options.signal?.addEventListener("abort", onSignal, { once: true });

  for (let rank = 0; rank < size; rank++) {
    const worker = new Worker(new URL("./rank_worker.ts", import.meta.url), { type: "module" });
    live++;
    workers.push(worker);
    let reported = false;
    const report = () => {
      if (reported) return false;
      reported = true;
      pending--;
      return true;
    };
    worker.onmessage = (e: MessageEvent<RankReport>) => {
      const msg = e.data;
      if (!report()) return;
      if (msg.type === "done") results[rank] = msg.result as T;
      else fail(rank, `${msg.name}: ${msg.message}`, Object.assign(new Error(msg.message), msg));
      finishIfSettled();
    };
    worker.onerror = (e: ErrorEvent) => {
      e.preventDefault();
      if (!report()) return;
      fail(rank, `worker crashed: ${e.message}`);
      finishIfSettled();
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
      heaps,
      shm,
      ports: ports[rank],
    };
    worker.postMessage(init, ports[rank].filter((p): p is MessagePort => p !== undefined));
  }

  return {
    results: done,
    kill(rank: number) {
      const w = workers[rank];
      if (!w) return;
      w.terminate();
      live--;
      workers[rank] = undefined;
      pending--;
      fail(rank, "worker was terminated");
      finishIfSettled();
    },
  };
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
