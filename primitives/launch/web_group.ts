/**
 * Starting a group of web transport ranks, as the transport's descriptor says: workers of this
 * page (or process) for `shm` and `worker`, logical ranks in one worker for `gpu`. Deno's
 * launcher (deno/launch/group.ts) adds processes and hands its ranks Deno's runtime.
 * @module
 */

import { WEB_TRANSPORTS, type WebTransportName } from "../registry.ts";
import type { GroupOptions, RankGroup } from "./supervisor.ts";
import { launchThread } from "./thread.ts";
import { launchWorkers } from "./workers.ts";

/** Options of {@linkcode launchWebGroup}. */
export interface WebGroupOptions extends GroupOptions {
  /** The transport; it decides how ranks start. @default {"shm"} */
  transport?: WebTransportName;
}

/**
 * Runs `module`'s `run(comm, args)` on `size` ranks of a web transport (`shm` unless told);
 * `results` resolves with what each rank returns.
 */
export function launchWebGroup<T = unknown>(
  module: URL | string,
  options: WebGroupOptions,
): RankGroup<T> {
  const transport = options.transport ?? WEB_TRANSPORTS.names[0];
  const launch = WEB_TRANSPORTS.byName[transport].launch;
  return launch === "thread"
    ? launchThread<T>(module, { ...options, transport })
    : launchWorkers<T>(module, { ...options, transport });
}

/**
 * Runs `module`'s `run(comm, args)` on `size` ranks of a web transport and resolves with what each
 * returns (see {@linkcode launchWebGroup}).
 */
export function spawnWebRanks<T = unknown>(
  module: URL | string,
  options: WebGroupOptions,
): Promise<T[]> {
  return launchWebGroup<T>(module, options).results;
}
