/**
 * Deno's side of the `websocket` transport (primitives/transports/websocket.ts): a process rank
 * listens for its peers' dials (tabs, and the higher processes) with the upgrade checks of
 * websocket_upgrade.ts, and joins the group's hub (websocket_hub.ts): the launcher's, in a mixed
 * group, or one rank 0 serves itself for a group of processes only.
 * @module
 */

import type { MeshOptions, ProcessesTransport } from "../../primitives/transports/transport.ts";
import { WEBSOCKET_FACTS } from "../../primitives/transports/websocket.ts";
import {
  type Dial,
  type GroupTable,
  joinWebSocketGroup,
  type Listener,
} from "../../primitives/transports/websocket_join.ts";
import { setImmediate } from "node:timers";
import { DEFAULT_TIMEOUT_MS } from "../../primitives/types.ts";
import { serveHub } from "./websocket_hub.ts";
import { checkUpgrade, hostNames, refuse, upgradeRules } from "./websocket_upgrade.ts";

/** Listens on `bind` for the dials of this rank's peers (see `Listener`). */
export function listen(o: MeshOptions): Listener {
  const hostname = o.bind ?? "127.0.0.1";
  let table: GroupTable | undefined;
  const known = Promise.withResolvers<void>();
  const waiting = new Map<number, PromiseWithResolvers<WebSocket>>();
  const dialed = new Set<number>();
  const arrival = (peer: number) => {
    if (!waiting.has(peer)) waiting.set(peer, Promise.withResolvers());
    return waiting.get(peer)!;
  };
  const server = Deno.serve({ hostname, port: 0, onListen() {} }, async (request) => {
    // A peer may dial before this rank has read the table: it waits for it here.
    await known.promise;
    const checked = checkUpgrade(
      request,
      upgradeRules(hostNames(advertised, port), o.token, table!.size, table!.origins),
    );
    if (checked instanceof Response) return checked;
    const peer = checked.rank;
    const expected = peer !== undefined && peer !== o.rank && (o.linked?.(peer) ?? true) &&
      (table!.members[peer].kind === "tab" || peer > o.rank);
    if (!expected || dialed.has(peer)) {
      return refuse(409, `rank ${peer} does not dial rank ${o.rank}, or has already`);
    }
    const { socket, response } = Deno.upgradeWebSocket(request, { protocol: checked.protocol });
    dialed.add(peer);
    socket.onopen = () => arrival(peer).resolve(socket);
    return response;
  });
  // A wildcard address is reached, on this machine, through loopback.
  const advertised = hostname === "0.0.0.0" || hostname === "::" ? "127.0.0.1" : hostname;
  const port = server.addr.port;
  return {
    url: `ws://${advertised.includes(":") ? `[${advertised}]` : advertised}:${port}/`,
    table(t) {
      table = t;
      known.resolve();
    },
    accepted: (peer) => arrival(peer).promise,
    async close() {
      known.resolve();
      await server.shutdown();
    },
  };
}

/**
 * Deno's own client WebSocket leaves Nagle's algorithm on (a 2 KiB message waits 40 ms for the
 * peer's delayed ack); npm `ws`'s client, with the same interface, turns it off. It is loaded
 * when a rank first dials (it reads the environment as it loads, and a program that imports
 * dccl from elsewhere has not this import map: hence the full specifier).
 */
async function nodeDial(): Promise<Dial> {
  const { WebSocket } = await import("npm:ws@8.18.3");
  return (url, protocol) => new WebSocket(url, protocol) as unknown as globalThis.WebSocket;
}

/** The `websocket` transport for Deno's process ranks (see the module docs). */
export const WEBSOCKET: ProcessesTransport & { name: "websocket" } = {
  ...WEBSOCKET_FACTS,
  name: "websocket",
  launch: "processes",
  async connect(o) {
    const timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    let hub: string;
    let ownHub: { close(): Promise<void> } | undefined;
    if (o.rank === 0 && o.masterPort === 0) {
      // Processes only: rank 0 serves the hub its peers join.
      const served = serveHub({
        size: o.size,
        processes: o.size,
        token: o.token,
        hostname: o.bind ?? "127.0.0.1",
        joinMs: timeoutMs,
      });
      ownHub = served;
      hub = served.url;
      o.onListening?.(served.port);
    } else {
      const host = o.masterAddr.includes(":") ? `[${o.masterAddr}]` : o.masterAddr;
      hub = `ws://${host}:${o.masterPort}/join`;
    }
    try {
      const { transport } = await joinWebSocketGroup({
        hub,
        token: o.token,
        rank: o.rank,
        listener: listen(o),
        dial: await nodeDial(),
        timeoutMs,
        linked: o.linked,
        // An immediate is Deno's quickest turn (a zero timer waits about a millisecond).
        loopTurn: () => new Promise((r) => setImmediate(r)),
        release: ownHub?.close,
      });
      return transport;
    } catch (e) {
      await ownHub?.close();
      throw e;
    }
  },
};
