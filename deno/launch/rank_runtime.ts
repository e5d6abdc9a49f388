/**
 * Deno's rank runtime (primitives/launch/runtime.ts), which Deno's launchers name for their
 * ranks: importing it installs Deno's platform offers; `start` binds the rank to the CPU its
 * launcher placed it on, and `startProgress` lets its progress thread leave that CPU; `connect`
 * links a hierarchical group's processes over a processes transport of the table.
 * @module
 */

import "../platform/install.ts";
import type { MeshOptions, Transport } from "../../primitives/transports/transport.ts";
import { bindRankThread } from "../platform/cpu_binding.ts";
import { unbindFromRank } from "../platform/scheduler_calls.ts";
import { TRANSPORT_TABLE } from "../transport_table.ts";

/** Binds the rank's thread to `cpu`, if its launcher placed it on one. */
export function start(cpu: number | undefined): void {
  bindRankThread(cpu);
}

/** Lets a rank's progress thread run on any of the process's CPUs, not only its rank's. */
export function startProgress(): void {
  unbindFromRank();
}

/** Connects this rank to the mesh of the processes transport named `transport`. */
export function connect(transport: string, options: MeshOptions): Promise<Transport> {
  return TRANSPORT_TABLE.launchedAs(transport, "processes").connect(options);
}

/** This module's URL, for `GroupOptions.runtime`. */
export const RANK_RUNTIME: string = import.meta.url;
