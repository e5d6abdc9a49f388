/**
 * Starting a group the way its transport's row in the registry says: workers of this process
 * (`shm`, `worker`) or local subprocesses (`ws`). Tests, `deno bench` and the CLI all start
 * groups here, so a new transport's launcher is one case here plus its row.
 * @module
 */

import { TRANSPORTS } from "../registry.ts";
import type { TransportName } from "../types.ts";
import { startProcesses } from "./spawn_processes.ts";
import { type RankGroup, startRanks } from "./spawn_ranks.ts";

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
  const { transport, bind, ...common } = options;
  switch (TRANSPORTS[transport].launch) {
    case "workers":
      return startRanks<T>(module, { ...common, transport: transport as "shm" | "worker" });
    case "processes": {
      const group = startProcesses(module, {
        ...common,
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
