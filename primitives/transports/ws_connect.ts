/**
 * Builds the `ws` mesh. Every rank listens (rank 0 on the rendezvous port, others on an
 * ephemeral one) and sends rank 0 its address over a first connection; rank 0 answers everyone
 * with the table, and every rank then connects to every other. Every connection presents the
 * run's token and its rank in the HTTP upgrade, and is refused before it can send a byte if
 * either is wrong. Even an authenticated peer is not trusted further: its first message is checked
 * (primitives/transports/rendezvous.ts) and a bad one only loses that connection its rank slot.
 * @module
 */

import type { IncomingMessage } from "node:http";
import { WebSocket, WebSocketServer } from "ws";
import { CommError, CommTimeoutError } from "../errors.ts";
import { DEFAULT_TIMEOUT_MS } from "../types.ts";
import {
  type Address,
  advertisedHost,
  awaitArrivals,
  checkAddress,
  checkTable,
  MAX_ADDRESS_BYTES,
  MAX_TABLE_BYTES,
  type MeshOptions,
  parseRank,
  readJson,
  tokenDigest,
  tokenMatches,
  waitFor,
  withDeadline,
} from "./rendezvous.ts";
import { closeText, WS_HEADER_BYTES, WS_SEGMENT_BYTES, type WsLinks, WsTransport } from "./ws.ts";

/** Where and how to join (see `MeshOptions`). */
export type WsConnectOptions = MeshOptions;

const HEADER_TOKEN = "x-dccl-token";
const HEADER_RANK = "x-dccl-rank";

/** Connects this rank to all others and returns the transport. */
export async function connectWs(o: WsConnectOptions): Promise<WsTransport> {
  const timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const deadline = Date.now() + timeoutMs;
  const sendTo: (WebSocket | undefined)[] = new Array(o.size).fill(undefined);
  const recvFrom: (WebSocket | undefined)[] = new Array(o.size).fill(undefined);
  if (o.size === 1) {
    return new WsTransport(o.rank, { sendTo, recvFrom, backlog: [] }, { timeoutMs });
  }

  // Peers may send as soon as they are connected, before this rank has its transport: hold
  // what arrives until the transport takes over.
  const backlog: [Uint8Array, boolean][][] = new Array(o.size);
  const arrived = new Map<number, Address>();
  /** Why an authenticated connection of a rank was dropped, for the timeout message. */
  const problems = new Map<number, string>();
  let onArrival = () => {};
  const server = await listen(o, {
    join(socket, peer) {
      sendTo[peer] = socket;
      if (o.rank !== 0) return onArrival();
      // Rank 0: the first message of every rank is its address, for the table.
      socket.once("message", (data: Uint8Array, isBinary: boolean) => {
        const json = readJson(data, isBinary, MAX_ADDRESS_BYTES);
        const address = "problem" in json ? json.problem : checkAddress(json.value);
        if (typeof address === "string") {
          problems.set(peer, `its first message was ${address}`);
          // Say why, but do not wait for a peer this broken to answer the closing handshake.
          socket.close(1008, closeText(`rendezvous: ${address}`));
          setTimeout(() => socket.terminate(), 100);
          return;
        }
        arrived.set(peer, address);
        onArrival();
      });
    },
    leave(peer) {
      sendTo[peer] = undefined;
      arrived.delete(peer);
    },
  });
  const serverPort = (server.address() as { port: number }).port;
  o.onListening?.(serverPort);

  try {
    let table: Address[];
    if (o.rank === 0) {
      await awaitArrivals(o, serverPort, deadline, arrived, problems, (f) => onArrival = f);
      table = [{ host: o.masterAddr, port: serverPort }];
      for (const [r, a] of arrived) table[r] = a;
      for (const r of arrived.keys()) sendTo[r]!.send(JSON.stringify(table));
    } else {
      // The first message is the table; data may follow in the same TCP read, so hold it.
      let gotTable!: (t: Address[] | string) => void;
      const tableArrived = new Promise<Address[] | string>((resolve) => gotTable = resolve);
      const master = await dial(o, 0, o.masterAddr, o.masterPort, deadline, (d, isBinary) => {
        if (backlog[0] !== undefined) {
          backlog[0].push([d, isBinary]);
          return;
        }
        backlog[0] = [];
        const json = readJson(d, isBinary, MAX_TABLE_BYTES);
        gotTable("problem" in json ? json.problem : checkTable(json.value, o.size));
      });
      recvFrom[0] = master;
      const local =
        (master as unknown as { _socket: { localAddress: string } })._socket.localAddress;
      master.send(
        JSON.stringify({
          host: advertisedHost(o.bind, local),
          port: serverPort,
        }),
      );
      const got = await withDeadline(
        tableArrived,
        deadline,
        "rank 0 never sent the rendezvous table",
        0,
      );
      if (typeof got === "string") {
        throw new CommError(`rank 0 sent a bad rendezvous table: ${got}`, { failedRank: 0 });
      }
      table = got;
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
  server.settle();
  return new WsTransport(o.rank, { sendTo, recvFrom, backlog } satisfies WsLinks, { timeoutMs });
}

/** What a listening rank does with authenticated peers until the mesh is complete. */
interface Membership {
  /** `peer` connected (its rank slot is now taken). */
  join(socket: WebSocket, peer: number): void;
  /** `peer`'s connection closed before the mesh was complete: its slot is free again. */
  leave(peer: number): void;
}

/**
 * Listens for peers. Each rank gets one slot: a second connection claiming a taken rank is
 * refused (409), and a connection that closes before the mesh is complete frees its slot, so the
 * real rank can still join. `settle()` stops listening and hands the connections over.
 */
function listen(
  o: WsConnectOptions,
  members: Membership,
): Promise<WebSocketServer & { settle(): void }> {
  const host = o.bind ?? "127.0.0.1";
  const port = o.rank === 0 ? o.masterPort : 0;
  const expected = tokenDigest(o.token);
  const taken = new Set<number>();
  let settled = false;
  const peerOf = (req: IncomingMessage) => parseRank(req.headers[HEADER_RANK], o.size);
  return new Promise((resolve, reject) => {
    const server = new WebSocketServer({
      host,
      port,
      perMessageDeflate: false,
      maxPayload: WS_HEADER_BYTES + WS_SEGMENT_BYTES,
      verifyClient: (
        { req }: { req: IncomingMessage },
        answer: (ok: boolean, code?: number, message?: string) => void,
      ) => {
        if (!tokenMatches(req.headers[HEADER_TOKEN], expected)) {
          return answer(false, 401, "Wrong token");
        }
        const peer = peerOf(req);
        if (peer === undefined || peer === o.rank) return answer(false, 400, "Bad rank");
        if (taken.has(peer) || settled) return answer(false, 409, "Rank already connected");
        answer(true);
      },
    });
    server.on("connection", (socket: WebSocket, req: IncomingMessage) => {
      const peer = peerOf(req)!;
      if (taken.has(peer) || settled) return socket.terminate();
      taken.add(peer);
      // Protocol violations (unmasked or oversized frames, reserved opcodes) close the socket
      // and emit an error here; its close is what counts.
      socket.on("error", () => {});
      socket.once("close", () => {
        if (settled) return;
        taken.delete(peer);
        members.leave(peer);
      });
      members.join(socket, peer);
    });
    server.once("listening", () => {
      resolve(Object.assign(server, {
        settle() {
          settled = true;
          server.close(); // the accepted connections stay open
        },
      }));
    });
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
      if (/\b40[13]\b/.test(last)) {
        throw new CommError(`rank ${peer} at ${host}:${port} refused this rank's token`, {
          failedRank: peer,
        });
      }
      if (/\b409\b/.test(last)) {
        throw new CommError(
          `rank ${peer} at ${host}:${port} already has a connection from rank ${o.rank}: ` +
            `is another process running as rank ${o.rank}?`,
          { failedRank: peer },
        );
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new CommTimeoutError(
    `rank ${o.rank} cannot reach rank ${peer} at ${host}:${port}: ${last || "timed out"}`,
    { failedRank: peer },
  );
}
