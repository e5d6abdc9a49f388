/**
 * Starting a group the way its transport's descriptor says: workers of this process, local
 * subprocesses, or logical ranks in one worker. Tests, `deno bench` and the CLI all start groups
 * here.
 * @module
 */

import { TRANSPORT_NAMES, TRANSPORTS, transportsLaunching } from "../registry.ts";
import { launchProcesses } from "./processes.ts";
import type { GroupOptions, RankGroup } from "./supervisor.ts";
import { launchThread } from "./thread.ts";
import { launchWorkers } from "./workers.ts";

/** Options of {@linkcode launchGroup}: every launcher's, and process ranks' address. */
export interface LaunchOptions extends GroupOptions {
  /** Address process ranks listen on. @default {"127.0.0.1"} */
  bind?: string;
  /**
   * Ranks per process of a processes transport, as workers sharing memory (nccl-tests' `-t`): a
   * hierarchical group of `size × threads` ranks. @default {1}
   */
  threads?: number;
}

/**
 * Runs `module`'s `run(comm, args)` on `size` ranks of `transport` (the registry's first unless
 * told); `results` resolves with what each rank returns.
 *
 * @example
 * ```ts ignore
 * const group = launchGroup(new URL("./rank_main.ts", import.meta.url), {
 *   size: 4,
 *   transport: "ws",
 * });
 * const sums = await group.results;
 * ```
 */
export function launchGroup<T = unknown>(
  module: URL | string,
  options: LaunchOptions,
): RankGroup<T> {
  const transport = options.transport ?? TRANSPORT_NAMES[0];
  const { bind, threads, ...common } = { ...options, transport };
  const launch = TRANSPORTS[transport].launch;
  if ((threads ?? 1) > 1 && launch !== "processes") {
    throw new RangeError(
      `threads ${threads} is not accepted with transport ${transport}: a process's ranks share ` +
        `memory over shm and the processes link over ${
          transportsLaunching("processes").join(" or ")
        }`,
    );
  }
  switch (launch) {
    case "workers":
      return launchWorkers<T>(module, common);
    case "thread":
      return launchThread<T>(module, common);
    case "processes":
      return launchProcesses<T>(module, {
        ...common,
        bind,
        threads,
        // Ranks listening on every interface are reached on this machine through loopback.
        masterAddr: bind === undefined || bind === "0.0.0.0" || bind === "::" ? "127.0.0.1" : bind,
      });
  }
}

/**
 * Runs `module`'s `run(comm, args)` on `size` ranks and resolves with what each returns (see
 * {@linkcode launchGroup}).
 *
 * @example
 * ```ts ignore
 * const sums = await spawnRanks(new URL("./rank_main.ts", import.meta.url), { size: 4 });
 * ```
 */
export function spawnRanks<T = unknown>(
  module: URL | string,
  options: LaunchOptions,
): Promise<T[]> {
  return launchGroup<T>(module, options).results;
}
