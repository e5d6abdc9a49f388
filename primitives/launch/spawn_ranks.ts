/**
 * The in-process launcher: runs one module in `size` Web Workers (SPMD), each handed a connected
 * Communicator, and collects what each rank returns. When a rank fails the others are told at
 * once, the rank that caused it is blamed (primitives/launch/verdict.ts), and every worker is
 * terminated whatever happens.
 * @module
 */

import { createHeapMemory } from "../memory/heap.ts";
import { DEFAULT_TIMEOUT_MS, type TransportName } from "../types.ts";
import type { RankInit, RankReport } from "./rank_worker.ts";
import { createShmSetup, raiseAbort } from "../transports/shm_layout.ts";
import { GroupEnds, type RankEnd } from "./verdict.ts";

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
  /** Terminates one rank's worker, as if it had died. */
  kill(rank: number): void;
}

/**
 * Milliseconds the launcher waits, once a rank has failed, for the others to report before it
 * judges and terminates them: ranks that fail because of it usually report first.
 */
export const FAILURE_GRACE_MS = 2000;

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
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const stragglerMs = options.stragglerMs ?? timeoutMs + FAILURE_GRACE_MS;
  const heaps = Array.from({ length: size }, () => createHeapMemory());
  const shm = transport === "shm" ? createShmSetup(size) : undefined;
  const ports = meshPorts(size, transport === "worker");
  const workers: (Worker | undefined)[] = [];
  const ends = new GroupEnds(size);
  let timer: ReturnType<typeof setTimeout> | undefined;
  let settled = false;
  let settle!: { resolve: (v: T[]) => void; reject: (e: unknown) => void };
  const done = new Promise<T[]>((resolve, reject) => settle = { resolve, reject });

  const terminate = (rank: number) => {
    const w = workers[rank];
    if (!w) return;
    w.terminate();
    live--;
    workers[rank] = undefined;
  };
  const finish = (outcome: () => void) => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    workers.forEach((_, r) => terminate(r));
    options.signal?.removeEventListener("abort", onSignal);
    outcome();
  };
  const judge = () => {
    const failure = ends.verdict();
    finish(() => failure ? settle.reject(failure) : settle.resolve(results()));
  };
  const results = () => Array.from({ length: size }, (_, r) => ends.result(r) as T);
  const wait = (ms: number) => {
    clearTimeout(timer);
    timer = setTimeout(judge, ms);
    Deno.unrefTimer(timer);
  };
  const ended = (rank: number, end: Omit<RankEnd, "at">) => {
    const wasFailed = ends.failed;
    if (!ends.record(rank, end) || settled) return;
    if (ends.allEnded) return judge();
    if (end.status === "ok") {
      // Ranks stuck in user code never report: give them a deadline once one has finished.
      if (!wasFailed && timer === undefined) {
        timer = setTimeout(() => {
          for (let r = 0; r < size; r++) {
            if (!ends.ended(r)) {
              ends.record(r, {
                status: "stuck",
                reason: `it had not finished ${stragglerMs} ms after rank ${rank} returned`,
              });
            }
          }
          judge();
        }, stragglerMs);
        Deno.unrefTimer(timer);
      }
      return;
    }
    if (wasFailed) return;
    // The first failure: tell every rank at once, then give the others a moment to report.
    const failedRank = ends.suspect(rank);
    const reason = end.reason ?? end.status;
    if (shm) raiseAbort(shm.control, size, failedRank, reason);
    workers.forEach((w) => w?.postMessage({ type: "abort", failedRank, reason }));
    wait(Math.min(FAILURE_GRACE_MS, timeoutMs));
  };
  // An abort is not a rank failure: terminating every worker is the whole teardown.
  const onSignal = () => finish(() => settle.reject(options.signal?.reason));
  options.signal?.addEventListener("abort", onSignal, { once: true });

  for (let rank = 0; rank < size; rank++) {
    const worker = new Worker(new URL("./rank_worker.ts", import.meta.url), { type: "module" });
    live++;
    workers.push(worker);
    worker.onmessage = (e: MessageEvent<RankReport>) => {
      const msg = e.data;
      if (msg.type === "done") ended(rank, { status: "ok", result: msg.result });
      else {
        ended(rank, {
          status: "failed",
          name: msg.name,
          reason: `${msg.name}: ${msg.message}`,
          blames: msg.failedRank,
        });
      }
    };
    worker.onerror = (e: ErrorEvent) => {
      e.preventDefault();
      ended(rank, { status: "failed", reason: `worker crashed: ${e.message}` });
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
      if (!workers[rank]) return;
      terminate(rank);
      ended(rank, { status: "killed", reason: "worker was terminated" });
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
