/**
 * Builds the `ws` mesh. Every rank listens (rank 0 on the rendezvous port, others on an
 * ephemeral one) and sends rank 0 its address over a first connection; rank 0 answers everyone
 * with the table, and every rank then connects to every other. Every connection presents the
 * run's token and its rank in the HTTP upgrade, and is refused before it can send a byte if
 * either is wrong.
 * @module
 */

import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { WebSocket, WebSocketServer } from "ws";
import { CommTimeoutError } from "../errors.ts";
import { WS_HEADER_BYTES, WS_SEGMENT_BYTES, type WsLinks, WsTransport } from "./ws.ts";

/** Where and how to join. */
export interface WsConnectOptions {
  rank: number;
  size: number;
  /** Rank 0's host, as the other ranks reach it. */
  masterAddr: string;
  /** Rank 0's rendezvous port. */
  masterPort: number;
  /** The run's shared secret; every connection must present it. */
  token: string;
  /** Address this rank listens on. @default {"127.0.0.1"} */
  bind?: string;
  /** Milliseconds for the whole rendezvous, and each later wait. @default {30000} */
  timeoutMs?: number;
  /** Called with the port this rank listens on, once it listens (for `masterPort` 0). */
  onListening?: (port: number) => void;
}

interface Address {
  host: string;
  port: number;
}

const HEADER_TOKEN = "x-dccl-token";
const HEADER_RANK = "x-dccl-rank";

/** Connects this rank to all others and returns the transport. */
export async function connectWs(o: WsConnectOptions): Promise<WsTransport> {
  const timeoutMs = o.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  const sendTo: (WebSocket | undefined)[] = new Array(o.size).fill(undefined);
  const recvFrom: (WebSocket | undefined)[] = new Array(o.size).fill(undefined);
  if (o.size === 1) {
    return new WsTransport(o.rank, { sendTo, recvFrom, backlog: [] }, { timeoutMs });
  }

  // Peers may send as soon as they are connected, before this rank has its transport: hold
  // what arrives until the transport takes over.
  const backlog: [Uint8Array, boolean][][] = new Array(o.size);
  const arrived = new Map<number, { socket: WebSocket; address?: Address }>();
  let onArrival = () => {};
  const server = await listen(o, (socket, peer) => {
    sendTo[peer] = socket;
    if (o.rank !== 0) return onArrival();
    // Rank 0: the first message of every rank is its address, for the table.
    socket.once("message", (data: Uint8Array) => {
      const address = JSON.parse(new TextDecoder().decode(data)) as Address;
      arrived.set(peer, { socket, address });
      onArrival();
    });
  });
  const serverPort = (server.address() as { port: number }).port;
  o.onListening?.(serverPort);

  try {
    let table: Address[];
    if (o.rank === 0) {
      table = await waitFor(
        () => arrived.size === o.size - 1,
        (f) => onArrival = f,
        deadline,
        () => {
          const missing = Array.from({ length: o.size }, (_, r) => r)
            .filter((r) => r !== 0 && !arrived.has(r));
          return `rendezvous timed out after ${timeoutMs} ms: rank${
            missing.length > 1 ? "s" : ""
          } ` +
            `${missing.join(", ")} of ${o.size} never arrived at ${o.masterAddr}:${serverPort}`;
        },
      ).then(() => {
        const t: Address[] = [{ host: o.masterAddr, port: serverPort }];
        for (const [r, a] of arrived) t[r] = a.address!;
        for (const { socket } of arrived.values()) socket.send(JSON.stringify(t));
        return t;
      });
    } else {
      // The first message is the table; data may follow in the same TCP read, so hold it.
      let gotTable!: (t: Address[]) => void;
      const tableArrived = new Promise<Address[]>((resolve) => gotTable = resolve);
      const master = await dial(o, 0, o.masterAddr, o.masterPort, deadline, (d, isBinary) => {
        if (backlog[0] === undefined) {
          backlog[0] = [];
          gotTable(JSON.parse(new TextDecoder().decode(d)));
        } else backlog[0].push([d, isBinary]);
      });
      recvFrom[0] = master;
      const local =
        (master as unknown as { _socket: { localAddress: string } })._socket.localAddress;
      master.send(
        JSON.stringify({
          host: o.bind === "0.0.0.0" || !o.bind ? local : o.bind,
          port: serverPort,
        }),
      );
      table = await withDeadline(tableArrived, deadline, "rank 0 never sent the rendezvous table");
    }
    // Data from p to this rank flows over the connection this rank opens to p.
    await Promise.all(
      table.map(async (a, peer) => {
        if (peer === o.rank || recvFrom[peer]) return;
        backlog[peer] = [];
        recvFrom[peer] = await dial(o, peer, a.host, a.port, deadline, (d, isBinary) => {
          backlog[peer].push([d, isBinary]);
        });
      }),
    );
    await waitFor(
      () => sendTo.every((s, p) => p === o.rank || s !== undefined),
      (f) => onArrival = f,
      deadline,
      () => {
        const missing = sendTo.map((s, p) => (s || p === o.rank ? -1 : p)).filter((p) => p >= 0);
        return `rank ${o.rank} timed out after ${timeoutMs} ms: ranks ${
          missing.join(", ")
        } never connected`;
      },
    );
  } catch (e) {
    for (const s of [...sendTo, ...recvFrom]) s?.terminate();
    server.close();
    throw e;
  }
  // The listening socket is no longer needed; the accepted connections stay open.
  server.close();
  return new WsTransport(o.rank, { sendTo, recvFrom, backlog } satisfies WsLinks, { timeoutMs });
}

function listen(
  o: WsConnectOptions,
  onPeer: (socket: WebSocket, peer: number) => void,
): Promise<WebSocketServer> {
  const host = o.bind ?? "127.0.0.1";
  const port = o.rank === 0 ? o.masterPort : 0;
  const expected = new TextEncoder().encode(o.token);
  const seen = new Set<number>();
  const peerOf = (req: IncomingMessage) => Number(req.headers[HEADER_RANK]);
  return new Promise((resolve, reject) => {
    const server = new WebSocketServer({
      host,
      port,
      perMessageDeflate: false,
      maxPayload: WS_HEADER_BYTES + WS_SEGMENT_BYTES,
      verifyClient: ({ req }: { req: IncomingMessage }) => {
        const token = new TextEncoder().encode(String(req.headers[HEADER_TOKEN] ?? ""));
        const peer = peerOf(req);
        return token.length === expected.length && timingSafeEqual(token, expected) &&
          Number.isInteger(peer) && peer >= 0 && peer < o.size && peer !== o.rank &&
          !seen.has(peer);
      },
    });
    server.on("connection", (socket: WebSocket, req: IncomingMessage) => {
      const peer = peerOf(req);
      seen.add(peer);
      onPeer(socket, peer);
    });
    server.once("listening", () => resolve(server));
    server.once("error", (e: Error & { code?: string }) =>
      reject(
        new Error(
          e.code === "EADDRINUSE"
            ? `port ${port} on ${host} is already in use; pick another MASTER_PORT`
            : `cannot listen on ${host}:${port}: ${e.message}`,
        ),
      ));
  });
}

/**
 * Connects to `peer`'s server, retrying until the deadline (it may still be starting).
 * `onMessage` is attached before the handshake completes: frames can arrive in the same read.
 */
async function dial(
  o: WsConnectOptions,
  peer: number,
  host: string,
  port: number,
  deadline: number,
  onMessage: (data: Uint8Array, isBinary: boolean) => void,
): Promise<WebSocket> {
  let last = "";
  while (Date.now() < deadline) {
    try {
      return await new Promise<WebSocket>((resolve, reject) => {
        const socket = new WebSocket(`ws://${host.includes(":") ? `[${host}]` : host}:${port}`, {
          headers: { [HEADER_TOKEN]: o.token, [HEADER_RANK]: String(o.rank) },
          perMessageDeflate: false,
          maxPayload: WS_HEADER_BYTES + WS_SEGMENT_BYTES,
          handshakeTimeout: Math.max(100, deadline - Date.now()),
        });
        socket.on("message", onMessage);
        socket.once("open", () => resolve(socket));
        socket.once("error", reject);
      });
    } catch (e) {
      last = (e as Error).message;
      if (/401|403/.test(last)) {
        throw new Error(`rank ${peer} at ${host}:${port} refused this rank's token`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new CommTimeoutError(
    `rank ${o.rank} cannot reach rank ${peer} at ${host}:${port}: ${last || "timed out"}`,
    { failedRank: peer },
  );
}

function waitFor(
  done: () => boolean,
  subscribe: (notify: () => void) => void,
  deadline: number,
  why: () => string,
): Promise<void> {
  if (done()) return Promise.resolve();
  return withDeadline(
    new Promise<void>((resolve) => subscribe(() => done() && resolve())),
    deadline,
    why,
  );
}

function withDeadline<T>(
  p: Promise<T>,
  deadline: number,
  why: string | (() => string),
): Promise<T> {
  let timer: ReturnType<typeof setTimeout>;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new CommTimeoutError(typeof why === "string" ? why : why())),
      Math.max(0, deadline - Date.now()),
    );
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
