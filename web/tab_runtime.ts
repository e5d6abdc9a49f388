/**
 * The rank runtime (primitives/launch/runtime.ts) of a tab's workers that run several ranks of a
 * mixed group: `connect` joins the group's hub over the `websocket` transport on the rank the
 * page reserved, linked to the ranks of other hosts only (hierarchy.ts).
 * @module
 */

import type { MeshOptions, Transport } from "../internal.ts";
import { DEFAULT_TIMEOUT_MS, joinWebSocketGroup, WEBSOCKET_FACTS } from "../internal.ts";

/** Joins the hub at `options.masterAddr:masterPort` as `options.rank` (over `websocket` only). */
export async function connect(transport: string, options: MeshOptions): Promise<Transport> {
  if (transport !== WEBSOCKET_FACTS.name) {
    throw new TypeError(`a tab links to its group over ${WEBSOCKET_FACTS.name}, not ${transport}`);
  }
  const host = options.masterAddr.includes(":") ? `[${options.masterAddr}]` : options.masterAddr;
  const { transport: joined } = await joinWebSocketGroup({
    hub: `ws://${host}:${options.masterPort}/join`,
    token: options.token,
    rank: options.rank,
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    linked: options.linked,
    about: { userAgent: navigator.userAgent, cores: navigator.hardwareConcurrency },
  });
  return joined;
}
