/**
 * Builds the `tcp` mesh: one connection per pair of ranks, opened by the higher rank. Every rank
 * listens (rank 0 on the rendezvous port, others on an ephemeral one). Each connection opens with
 * a fixed-size hello (magic, the dialer's rank, the SHA-256 digest of the run's token) that the
 * listener answers with one status byte, refusing a wrong token, a bad rank or a rank already
 * connected before any other byte is read. Rank 0's connections then carry the rendezvous: each
 * rank sends its address, rank 0 answers everyone with the table, and each rank acknowledges it
 * with one byte. A connection that closes before acknowledging frees its rank's slot. Everything
 * read is bounded and checked (primitives/transports/rendezvous.ts).
 * @module
 */

import { timingSafeEqual } from "node:crypto";
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
  readJson,
  tokenDigest,
  waitFor,
  withDeadline,
} from "./rendezvous.ts";
import { closeQuietly, TcpTransport, writeAll } from "./tcp.ts";

const HELLO_MAGIC = 0x74636364; // "dcct"
/** Magic, rank (u32 each) and the token's SHA-256 digest. */
const HELLO_BYTES = 40;
/** The listener's answer to a hello. */
const STATUS = { accepted: 0, wrongToken: 1, badRank: 2, rankTaken: 3 } as const;
const ACK = 1;

/** Connects this rank to all others and returns the transport. */
export async function connectTcp(o: MeshOptions): Promise<TcpTransport> {
  const timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const deadline = Date.now() + timeoutMs;
  const conns: (Deno.TcpConn | undefined)[] = new Array(o.size).fill(undefined);
  if (o.size === 1) return new TcpTransport(o.rank, conns, { timeoutMs });

  /** Rank 0: each rank's address, once it sent one. */
  const arrived = new Map<number, Address>();
  /** Rank 0: why an authenticated connection of a rank was dropped, for the timeout message. */
  const problems = new Map<number, string>();
  /** Rank 0: each rank's acknowledgement of the table (its one byte, or null if it closed). */
  const acks = new Map<number, Promise<Uint8Array | null>>();
  let notify = () => {};
  const server = listen(o, deadline, async (conn, peer) => {
    if (o.rank === 0) {
      const address = await readAddress(conn, deadline);
      if (typeof address === "string") {
        problems.set(peer, `its first message was ${address}`);
        return false;
      }
      arrived.set(peer, address);
      // The next byte is the acknowledgement of the table; ending first frees the slot.
      const ack = readExactly(conn, 1, deadline).catch(() => null);
      acks.set(peer, ack);
      ack.then((byte) => {
        if (byte === null && acks.get(peer) === ack && !tableSent) {
          arrived.delete(peer);
          acks.delete(peer);
          conns[peer] = undefined;
          server.free(peer);
        }
      });
    }
    conns[peer] = conn;
    notify();
    return true;
  });
  let tableSent = false;
  o.onListening?.(server.port);

  try {
    if (o.rank === 0) {
      await awaitArrivals(o, server.port, deadline, arrived, problems, (f) => notify = f);
      tableSent = true;
      const table = [
        { host: o.masterAddr, port: server.port },
        ...ranks(o.size).slice(1)
          .map((r) => arrived.get(r)!),
      ];
      const text = new TextEncoder().encode(JSON.stringify(table));
      await Promise.all(
        ranks(o.size).slice(1).map(async (r) => {
          await writeAll(conns[r]!, lengthPrefixed(text));
          const ack = await withDeadline(
            acks.get(r)!,
            deadline,
            `rank ${r} never took the table`,
            r,
          );
          if (ack?.[0] !== ACK) {
            throw new CommError(`rank ${r} left during the rendezvous`, { failedRank: r });
          }
        }),
      );
    } else {
      const master = await dial(o, 0, o.masterAddr, o.masterPort, deadline);
      conns[0] = master;
      const host = advertisedHost(o.bind, (master.localAddr as Deno.NetAddr).hostname);
      const address = new TextEncoder().encode(JSON.stringify({ host, port: server.port }));
      await writeAll(master, lengthPrefixed(address));
      const table = await readTable(master, o.size, deadline);
      await writeAll(master, Uint8Array.of(ACK));
      // This rank dials every lower rank; higher ranks dial it.
      await Promise.all(
        table.slice(1, o.rank).map(async (a, i) => {
          conns[i + 1] = await dial(o, i + 1, a.host, a.port, deadline);
        }),
      );
      await waitFor(
        () => conns.every((c, p) => p === o.rank || c !== undefined),
        (f) => notify = f,
        deadline,
        () =>
          `rank ${o.rank} timed out after ${timeoutMs} ms: ranks ${
            conns.map((c, p) => (c || p === o.rank ? -1 : p)).filter((p) => p >= 0).join(", ")
          } never connected`,
      );
    }
  } catch (e) {
    for (const c of conns) closeQuietly(c);
    server.close();
    throw e;
  }
  server.close();
  return new TcpTransport(o.rank, conns, { timeoutMs });
}

/** A listening rank: accepts authenticated peers, one connection per rank, until closed. */
interface Server {
  port: number;
  /** Lets `peer` connect again (its connection closed before the mesh was complete). */
  free(peer: number): void;
  /** Stops listening; accepted connections stay open. */
  close(): void;
}

/**
 * Listens for peers. `admit` runs for each authenticated connection and says whether it keeps
 * its rank's slot; a second connection claiming a taken rank is refused.
 */
function listen(
  o: MeshOptions,
  deadline: number,
  admit: (conn: Deno.TcpConn, peer: number) => Promise<boolean>,
): Server {
  const hostname = o.bind ?? "127.0.0.1";
  const port = o.rank === 0 ? o.masterPort : 0;
  let listener: Deno.TcpListener;
  try {
    listener = Deno.listen({ hostname, port });
  } catch (e) {
    throw new Error(
      e instanceof Deno.errors.AddrInUse
        ? `port ${port} on ${hostname} is already in use; pick another MASTER_PORT`
        : `cannot listen on ${hostname}:${port}: ${(e as Error).message}`,
    );
  }
  const expected = tokenDigest(o.token);
  const taken = new Set<number>();
  let closed = false;
  const greet = async (conn: Deno.TcpConn) => {
    let slot: number | undefined;
    try {
      const hello = await readExactly(conn, HELLO_BYTES, deadline);
      if (!hello) return closeQuietly(conn);
      const view = new DataView(hello.buffer);
      const peer = view.getUint32(4, true);
      const status = view.getUint32(0, true) !== HELLO_MAGIC ||
          !timingSafeEqual(hello.subarray(8), expected)
        ? STATUS.wrongToken
        : peer >= o.size || peer === o.rank || (o.rank !== 0 && peer < o.rank)
        ? STATUS.badRank
        : taken.has(peer) || closed
        ? STATUS.rankTaken
        : STATUS.accepted;
      await writeAll(conn, Uint8Array.of(status));
      if (status !== STATUS.accepted) return closeQuietly(conn);
      taken.add(slot = peer);
      if (await admit(conn, peer)) return;
    } catch { /* it sent too little, too late, or went away */ }
    if (slot !== undefined) taken.delete(slot);
    closeQuietly(conn);
  };
  (async () => {
    try {
      for await (const conn of listener) {
        if (closed) closeQuietly(conn);
        else greet(conn);
      }
    } catch { /* closed */ }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    free: (peer) => taken.delete(peer),
    close() {
      closed = true;
      try {
        listener.close();
      } catch { /* already closed */ }
    },
  };
}

/** Connects to `peer` and presents the token, retrying until the deadline (it may be starting). */
async function dial(
  o: MeshOptions,
  peer: number,
  hostname: string,
  port: number,
  deadline: number,
): Promise<Deno.TcpConn> {
  const hello = new Uint8Array(HELLO_BYTES);
  new DataView(hello.buffer).setUint32(0, HELLO_MAGIC, true);
  new DataView(hello.buffer).setUint32(4, o.rank, true);
  hello.set(tokenDigest(o.token), 8);
  let last = "";
  while (Date.now() < deadline) {
    let conn: Deno.TcpConn | undefined;
    try {
      conn = await Deno.connect({ hostname, port });
      conn.setNoDelay(true);
      await writeAll(conn, hello);
      const status = await readExactly(conn, 1, deadline);
      if (status?.[0] === STATUS.accepted) return conn;
      closeQuietly(conn);
      if (status?.[0] === STATUS.wrongToken) {
        throw new CommError(`rank ${peer} at ${hostname}:${port} refused this rank's token`, {
          failedRank: peer,
        });
      }
      if (status?.[0] === STATUS.rankTaken) {
        throw new CommError(
          `rank ${peer} at ${hostname}:${port} already has a connection from rank ${o.rank}: ` +
            `is another process running as rank ${o.rank}?`,
          { failedRank: peer },
        );
      }
      last = status ? `it refused rank ${o.rank} of ${o.size}` : "it closed the connection";
    } catch (e) {
      if (e instanceof CommError) throw e;
      closeQuietly(conn);
      last = (e as Error).message;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new CommTimeoutError(
    `rank ${o.rank} cannot reach rank ${peer} at ${hostname}:${port}: ${last || "timed out"}`,
    { failedRank: peer },
  );
}

/** A rank's address message on `conn`, or why it is not one. */
async function readAddress(conn: Deno.TcpConn, deadline: number): Promise<Address | string> {
  const json = await readMessage(conn, MAX_ADDRESS_BYTES, deadline);
  return "problem" in json ? json.problem : checkAddress(json.value);
}

/** The table from rank 0. */
async function readTable(conn: Deno.TcpConn, size: number, deadline: number): Promise<Address[]> {
  const json = await withDeadline(
    readMessage(conn, MAX_TABLE_BYTES, deadline),
    deadline,
    "rank 0 never sent the rendezvous table",
    0,
  );
  const table = "problem" in json ? json.problem : checkTable(json.value, size);
  if (typeof table === "string") {
    throw new CommError(`rank 0 sent a bad rendezvous table: ${table}`, { failedRank: 0 });
  }
  return table;
}

/** A length-prefixed JSON message of at most `maxBytes`. */
async function readMessage(
  conn: Deno.TcpConn,
  maxBytes: number,
  deadline: number,
): Promise<{ value: unknown } | { problem: string }> {
  const head = await readExactly(conn, 4, deadline);
  if (!head) return { problem: "nothing (the connection closed)" };
  const length = new DataView(head.buffer).getUint32(0, true);
  if (length > maxBytes) {
    return { problem: `a ${length}-byte message (at most ${maxBytes} accepted)` };
  }
  const body = await readExactly(conn, length, deadline);
  if (!body) return { problem: "a message cut short (the connection closed)" };
  return readJson(body, false, maxBytes);
}

/** Exactly `n` bytes from `conn`, or null if it ends first; rejects at the deadline. */
async function readExactly(
  conn: Deno.TcpConn,
  n: number,
  deadline: number,
): Promise<Uint8Array | null> {
  const bytes = new Uint8Array(n);
  const timer = setTimeout(() => closeQuietly(conn), Math.max(0, deadline - Date.now()));
  try {
    for (let got = 0; got < n;) {
      const r = await conn.read(bytes.subarray(got));
      if (r === null) return null;
      got += r;
    }
    return bytes;
  } finally {
    clearTimeout(timer);
  }
}

function lengthPrefixed(body: Uint8Array): Uint8Array {
  const out = new Uint8Array(4 + body.byteLength);
  new DataView(out.buffer).setUint32(0, body.byteLength, true);
  out.set(body, 4);
  return out;
}

function ranks(size: number): number[] {
  return Array.from({ length: size }, (_, r) => r);
}
