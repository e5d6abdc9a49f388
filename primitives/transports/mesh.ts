/**
 * The process meshes: transports whose ranks are processes (or hosts) that meet at a rendezvous.
 * Launchers connect through here, so they start `ws` and `tcp` ranks the same way.
 * @module
 */

import type { MeshOptions } from "./rendezvous.ts";
import { connectTcp } from "./tcp_connect.ts";
import type { Transport } from "./transport.ts";
import { connectWs } from "./ws_connect.ts";

/** Transports whose ranks are processes. */
export const MESH_TRANSPORTS = ["ws", "tcp"] as const;
/** One of {@linkcode MESH_TRANSPORTS}. */
export type MeshTransport = typeof MESH_TRANSPORTS[number];

/** Connects this rank to the others over `transport`. */
export function connectMesh(transport: MeshTransport, options: MeshOptions): Promise<Transport> {
  return transport === "tcp" ? connectTcp(options) : connectWs(options);
}

/** `value` if it names a process transport (an environment variable, say); else a one-line Error. */
export function meshTransport(value: string, source: string): MeshTransport {
  if ((MESH_TRANSPORTS as readonly string[]).includes(value)) return value as MeshTransport;
  throw new Error(`${source}=${value} is not accepted: expected ${MESH_TRANSPORTS.join(" or ")}`);
}
