/**
 * What a rank's runtime adds to the web platform when it joins a group: the module a launcher
 * names in `GroupOptions.runtime` exports these, and every rank imports it before it joins. On a
 * web page there is none; Deno's (deno/launch/rank_runtime.ts) installs its platform offers,
 * binds the rank to its CPU and links processes.
 * @module
 */

import type { MeshOptions, Transport } from "../transports/transport.ts";

/** A rank runtime module's exports (all optional). */
export interface RankRuntime {
  /** Runs first in every rank: `cpu` is the CPU its launcher placed it on, if any. */
  start?(cpu: number | undefined): void;
  /**
   * Runs first in a rank's progress thread, which the rank's thread started and which must not
   * share the rank's CPU with it.
   */
  startProgress?(): void;
  /** Connects this rank to the mesh of the processes transport named `transport`. */
  connect?(transport: string, options: MeshOptions): Promise<Transport>;
}

/** The runtime module at `url` (none: the web platform alone). */
export async function loadRuntime(url: string | undefined): Promise<RankRuntime> {
  if (url === undefined) return {};
  const runtime: RankRuntime = await import(url);
  return runtime;
}
