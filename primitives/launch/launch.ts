/**
 * Starting a group the way its transport's row in the registry says: workers of this process
 * (`shm`, `worker`), local subprocesses (`ws`, `tcp`) or logical ranks in one worker (`gpu`).
 * Tests, `deno bench` and the CLI all start groups here, so a new transport's launcher is one case
 * here plus its row.
 * @module
 */

import { TRANSPORTS } from "../registry.ts";
import type { MeshTransport } from "../transports/mesh.ts";
import type { TransportName } from "../types.ts";
import { startProcesses } from "./spawn_processes.ts";
import { type RankGroup, startRanks } from "./spawn_ranks.ts";
import { startThreadRanks } from "./spawn_thread.ts";

/** Options of {@linkcode startGroup}. */
export interface GroupOptions {
  /** Number of ranks. */
  size: number;
  /** The transport; it decides how ranks start. */
  transport: TransportName;
  /** Milliseconds an operation may wait without progress. @default {30000} */
  timeoutMs?: number;
  /** Milliseconds stragglers have once a rank has finished. @default {timeoutMs + 2000} */
  stragglerMs?: number;
  /** Passed to every rank's `run(comm, args)` (structured-cloned for workers, JSON for processes). */
  args?: unknown;
  /** Aborting stops every rank and rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Address process ranks listen on. @default {"127.0.0.1"} */
  bind?: string;
  /** Open a WebGPU device in every rank, for `gpu` and `managed` memory. @default {false} */
  gpu?: boolean;
}

/**
 * Runs `module`'s `run(comm, args)` on `size` ranks of `transport`; `results` resolves with what
 * each rank returns.
 *
 * @example
 * ```ts ignore
 * const sums = await startGroup(new URL("./rank_main.ts", import.meta.url), {
 *   size: 4,
 *   transport: "ws",
 * }).results;
 * ```
 */
export function startGroup<T = unknown>(module: URL | string, options: GroupOptions): RankGroup<T> {
  const { transport, bind, gpu, ...common } = options;
  switch (TRANSPORTS[transport].launch) {
    case "workers":
      return startRanks<T>(module, { ...common, gpu, transport: transport as "shm" | "worker" });
    case "thread":
      return startThreadRanks<T>(module, common);
    case "processes": {
      const group = startProcesses(module, {
        ...common,
        transport: transport as MeshTransport,
        gpu,
        bind,
        // Ranks listening on every interface are reached on this machine through loopback.
        masterAddr: bind === undefined || bind === "0.0.0.0" || bind === "::" ? "127.0.0.1" : bind,
      });
      const results = group.results.then((all) =>
        all.map((r) => (r === "" ? undefined : JSON.parse(r)) as T)
      );
      return { results, kill: group.kill };
    }
  }
}
