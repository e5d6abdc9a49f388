/**
 * Starting a group the way its transport's descriptor says: workers of this process, local
 * subprocesses, or logical ranks in one worker. Tests, `deno bench` and the CLI all start groups
 * here.
 * @module
 */

import type { GroupOptions, RankGroup } from "../../primitives/launch/supervisor.ts";
import { launchWebGroup } from "../../primitives/launch/web_group.ts";
import { cpuForSlot } from "../platform/cpu_binding.ts";
import { WEB_TRANSPORTS } from "../../primitives/registry.ts";
import {
  TRANSPORT_NAMES,
  TRANSPORT_TABLE,
  type TransportName,
  TRANSPORTS,
} from "../transport_table.ts";
import { launchProcesses } from "./processes.ts";
import { RANK_RUNTIME } from "./rank_runtime.ts";
import { requirePermissions } from "./permissions.ts";

/** Options of {@linkcode launchGroup}: every launcher's, and process ranks' address. */
export interface LaunchOptions extends GroupOptions {
  /** The transport; it decides how ranks start. @default {"shm"} */
  transport?: TransportName;
  /** Address process ranks listen on. @default {"127.0.0.1"} */
  bind?: string;
  /**
   * Ranks per process of a processes transport, as workers sharing memory (nccl-tests' `-t`): a
   * hierarchical group of `size × threads` ranks. @default {1}
   */
  threads?: number;
  /**
   * Where process ranks' output lines go (workers print to this process's console). @default
   * {rank 0's stdout as it is, every other line prefixed `[rank r]`}
   */
  onLine?: (rank: number, stream: "stdout" | "stderr", line: string) => void;
}

/**
 * Runs `module`'s `run(comm, args)` on `size` ranks of `transport` (`shm` unless told): workers
 * of this process, local processes or logical ranks on one device, as the transport starts its
 * ranks; `results` resolves with what each rank returns.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { launchGroup } from "./group.ts";
 *
 * // Two Deno processes linked over WebSocket, each running examples/allreduce_rank.ts.
 * const module = new URL("../../examples/allreduce_rank.ts", import.meta.url);
 * const group = launchGroup<number>(module, { size: 2, transport: "ws" });
 * assertEquals(await group.results, [3, 3]);
 * ```
 */
export function launchGroup<T = unknown>(
  module: URL | string,
  options: LaunchOptions,
): RankGroup<T> {
  const transport = options.transport ?? TRANSPORT_NAMES[0];
  const { bind, threads, onLine, progress, ...given } = { ...options, transport };
  // Deno's ranks install its platform offers and are placed on CPUs as Open MPI binds them.
  const common = { runtime: RANK_RUNTIME, placement: cpuForSlot, ...given };
  const launch = TRANSPORTS[transport].launch;
  requirePermissions(launch, transport, new URL(module));
  if ((threads ?? 1) > 1 && launch !== "processes") {
    throw new RangeError(
      `threads ${threads} is not accepted with transport ${transport}: a process's ranks share ` +
        `memory over shm and the processes link over ${
          TRANSPORT_TABLE.launching("processes").join(" or ")
        }`,
    );
  }
  const progressing = [
    ...TRANSPORT_TABLE.launching("processes"),
    WEB_TRANSPORTS.sharedMemory().name,
  ];
  if (
    progress === "thread" && (!progressing.includes(transport) || (threads ?? 1) > 1 || options.gpu)
  ) {
    throw new RangeError(
      `progress thread is not accepted with transport ${transport}${
        (threads ?? 1) > 1 ? ` and threads ${threads}` : ""
      }${options.gpu ? " and gpu" : ""}: it runs a rank's communicator over ${
        progressing.join(", ")
      } on host buffers`,
    );
  }
  if (WEB_TRANSPORTS.has(transport)) {
    return launchWebGroup<T>(module, { ...common, progress, transport });
  }
  return launchProcesses<T>(module, {
    ...common,
    bind,
    threads,
    onLine,
    env: progress ? { DCCL_PROGRESS: progress } : undefined,
    // Ranks listening on every interface are reached on this machine through loopback.
    masterAddr: bind === undefined || bind === "0.0.0.0" || bind === "::" ? "127.0.0.1" : bind,
  });
}

/**
 * Runs `module`'s `run(comm, args)` on `size` ranks and resolves with what each returns (see
 * {@linkcode launchGroup}).
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { spawnRanks } from "./group.ts";
 *
 * const module = new URL("../../examples/allreduce_rank.ts", import.meta.url);
 * assertEquals(await spawnRanks<number>(module, { size: 4 }), [10, 10, 10, 10]);
 * ```
 */
export function spawnRanks<T = unknown>(
  module: URL | string,
  options: LaunchOptions,
): Promise<T[]> {
  return launchGroup<T>(module, options).results;
}
