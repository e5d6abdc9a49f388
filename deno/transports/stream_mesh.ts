/**
 * Builds the mesh of a stream transport (`tcp`, `ws`). Every rank listens (rank 0 on the
 * rendezvous port, others on an ephemeral one). Each connection opens with a greeting that
 * presents the dialer's rank and the run's token ({@linkcode Handshake}: tcp_connect.ts,
 * ws_connect.ts); the listener refuses a wrong token, a bad rank or a rank already connected
 * before it reads anything else. Rank 0's connections then carry the rendezvous: each rank sends
 * its address, rank 0 answers everyone with the table, and each rank acknowledges it. A
 * connection that closes before acknowledging frees its rank's slot. Then the ranks dial each
 * other. Everything read is bounded and checked (deno/transports/rendezvous.ts).
 * @module
 */

import type { MeshOptions } from "../../primitives/transports/transport.ts";
import { CommError, CommTimeoutError } from "../../primitives/errors.ts";
import { DEFAULT_TIMEOUT_MS } from "../../primitives/types.ts";
import {
  type Address,
  advertisedHost,
  awaitArrivals,
  checkAddress,
  checkTable,
  CLOSED_FIRST,
  MAX_ADDRESS_BYTES,
  MAX_TABLE_BYTES,
  readJson,
  waitFor,
  withDeadline,
} from "./rendezvous.ts";
import { closeQuietly } from "./stream_link.ts";
import type { MeshConnection } from "./stream_wire.ts";

/** A listener's answer to a greeting. */
export type Answer = "accepted" | "wrongToken" | "badRank" | "rankTaken";

/** How a mesh's connections greet and carry the rendezvous, before its transport exists. */
export interface Handshake {
  /** Dialer: presents this rank and the token; the listener's answer, null if it closed first. */
  offer(r: Reader, o: MeshOptions, host: string, port: number): Promise<Answer | null>;
  /**
   * Listener: reads a greeting and sends the answer `judge` gives; the dialer's rank if
   * accepted. `judge` gets whether the token matched and the rank claimed, if a valid number.
   */
  answer(
    r: Reader,
    o: MeshOptions,
    judge: (tokenMatches: boolean, peer: number | undefined) => Answer,
  ): Promise<number | undefined>;
  /** Writes a rendezvous message from the dialer's side (`fromDialer`) or the listener's. */
  write(conn: Deno.TcpConn, message: Uint8Array, fromDialer: boolean): Promise<void>;
  /** Reads a rendezvous message of at most `maxBytes`, or says why it is none. */
  read(r: Reader, maxBytes: number, fromDialer: boolean): Promise<Uint8Array | string>;
}

const ACK = new TextEncoder().encode("ack");

/**
 * Reads a connection in chunks, bounded by a deadline (at which it closes the connection, so
 * the read in flight ends).
 */
export class Reader {
  readonly conn: Deno.TcpConn;
  readonly deadline: number;
  #buf = new Uint8Array(4096);
  #start = 0;
  #end = 0;

  constructor(conn: Deno.TcpConn, deadline: number) {
    this.conn = conn;
    this.deadline = deadline;
  }

  /** The next `n` bytes, or null if the stream ends first. */
  async exactly(n: number): Promise<Uint8Array | null> {
    if (!(await this.#fill(n))) return null;
    this.#start += n;
    return this.#buf.slice(this.#start - n, this.#start);
  }

  /**
   * The bytes up to and including the first `delimiter`, or null if the stream ends, or
   * `maxBytes` pass, first.
   */
  async through(delimiter: Uint8Array, maxBytes: number): Promise<Uint8Array | null> {
    for (let searched = 0;;) {
      const held = this.#buf.subarray(this.#start, this.#end);
      for (let at = searched; at + delimiter.byteLength <= held.byteLength; at++) {
        if (delimiter.every((b, i) => held[at + i] === b)) {
          return this.exactly(at + delimiter.byteLength);
        }
      }
      searched = Math.max(0, held.byteLength - delimiter.byteLength + 1);
      if (held.byteLength >= maxBytes || !(await this.#fill(held.byteLength + 1))) return null;
    }
  }

  /** What was read past the last byte handed out. */
  rest(): Uint8Array {
    return this.#buf.slice(this.#start, this.#end);
  }

  /** Reads until `n` bytes are held; false if the stream ends first. */
  async #fill(n: number): Promise<boolean> {
    if (this.#end - this.#start >= n) return true;
    if (this.#buf.byteLength - this.#start < n) {
      const grown = new Uint8Array(Math.max(n, 2 * this.#buf.byteLength));
      grown.set(this.#buf.subarray(this.#start, this.#end));
      [this.#buf, this.#end, this.#start] = [grown, this.#end - this.#start, 0];
    }
    const timer = setTimeout(
      () => closeQuietly(this.conn),
      Math.max(0, this.deadline - Date.now()),
    );
    try {
      while (this.#end - this.#start < n) {
        const got = await this.conn.read(this.#buf.subarray(this.#end));
        if (got === null) return false;
        this.#end += got;
      }
      return true;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** A connected mesh: the connections, for the transport to take over, and where each rank runs. */
export interface StreamMesh {
  connections: MeshConnection[];
  /**
   * Each rank's host as an index (ranks that gave rank 0 the same address share one), in order
   * of first appearance.
   */
  hosts: number[];
}

/** Connects this rank to all others. */
export async function connectStreamMesh(
  o: MeshOptions,
  handshake: Handshake,
): Promise<StreamMesh> {
  const timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const deadline = Date.now() + timeoutMs;
  const accepted: (Reader | undefined)[] = new Array(o.size).fill(undefined);
  const dialed: (Reader | undefined)[] = new Array(o.size).fill(undefined);
  if (o.size === 1) return { connections: [], hosts: [0] };
  const others = ranks(o.size).filter((r) => r !== o.rank);
  const linked = others.filter(o.linked ?? (() => true));
  /** Ranks that dial this one to stay: the higher linked ones (one connection per pair). */
  const dialers = linked.filter((r) => r > o.rank);

  /** Rank 0: each rank's address, once it sent one. */
  const arrived = new Map<number, Address>();
  /** Rank 0: why an authenticated connection of a rank was dropped, for the timeout message. */
  const problems = new Map<number, string>();
  /** Rank 0: each rank's acknowledgement of the table (null if it closed or sent another). */
  const acks = new Map<number, Promise<Uint8Array | null>>();
  let tableSent = false;
  let notify = () => {};
  const server = listen(o, deadline, handshake, async (reader, peer) => {
    if (o.rank === 0) {
      const message = await handshake.read(reader, MAX_ADDRESS_BYTES, true);
      const json = typeof message === "string"
        ? { problem: message }
        : readJson(message, false, MAX_ADDRESS_BYTES);
      const address = "problem" in json ? json.problem : checkAddress(json.value);
      if (typeof address === "string") {
        problems.set(peer, `its first message was ${address}`);
        return false;
      }
      arrived.set(peer, address);
      // The next message is the acknowledgement of the table; ending first frees the slot.
      const ack = handshake.read(reader, ACK.byteLength, true)
        .then((m) => typeof m === "string" ? null : m, () => null);
      acks.set(peer, ack);
      ack.then((m) => {
        if (m === null && acks.get(peer) === ack && !tableSent) {
          arrived.delete(peer);
          acks.delete(peer);
          accepted[peer] = undefined;
          server.free(peer);
        }
      });
    }
    accepted[peer] = reader;
    notify();
    return true;
  });
  o.onListening?.(server.port);

  let table: Address[] = [];
  try {
    if (o.rank === 0) {
      await awaitArrivals(o, server.port, deadline, arrived, problems, (f) => notify = f);
      tableSent = true;
      table = [{ host: o.masterAddr, port: server.port }, ...others.map((r) => arrived.get(r)!)];
      const text = new TextEncoder().encode(JSON.stringify(table));
      await Promise.all(others.map(async (r) => {
        await handshake.write(accepted[r]!.conn, text, false);
        const ack = await withDeadline(acks.get(r)!, deadline, `rank ${r} never took the table`, r);
        if (ack === null || !sameBytes(ack, ACK)) {
          throw new CommError(`rank ${r} left during the rendezvous`, { failedRank: r });
        }
      }));
    } else {
      const master = await dial(o, handshake, 0, o.masterAddr, o.masterPort, deadline);
      dialed[0] = master;
      const host = advertisedHost(o.bind, (master.conn.localAddr as Deno.NetAddr).hostname);
      const address = new TextEncoder().encode(JSON.stringify({ host, port: server.port }));
      await handshake.write(master.conn, address, true);
      table = await readTable(master, handshake, o.size);
      await handshake.write(master.conn, ACK, true);
    }
    // Then every rank dials the lower linked ranks: one connection per pair.
    await Promise.all(
      linked.filter((p) => !dialed[p] && p < o.rank).map(async (p) => {
        dialed[p] = await dial(o, handshake, p, table[p].host, table[p].port, deadline);
      }),
    );
    await waitFor(
      () => dialers.every((p) => accepted[p] !== undefined),
      (f) => notify = f,
      deadline,
      () =>
        `rank ${o.rank} timed out after ${timeoutMs} ms: ranks ${
          dialers.filter((p) => !accepted[p]).join(", ")
        } never connected`,
    );
  } catch (e) {
    for (const r of [...accepted, ...dialed]) closeQuietly(r?.conn);
    server.close();
    throw e;
  }
  server.close();
  const connections: MeshConnection[] = [];
  for (const [readers, isDialed] of [[accepted, false], [dialed, true]] as const) {
    readers.forEach((r, peer) => {
      // A rendezvous-only connection (rank 0 and a rank it does not link) ends here.
      if (r && !linked.includes(peer)) closeQuietly(r.conn);
      else if (r) connections.push({ peer, conn: r.conn, dialed: isDialed, head: r.rest() });
    });
  }
  return { connections, hosts: hostIndices(table) };
}

/** Each address's host as an index, numbered in order of first appearance. */
function hostIndices(table: readonly Address[]): number[] {
  const seen = new Map<string, number>();
  return table.map((a) => {
    if (!seen.has(a.host)) seen.set(a.host, seen.size);
    return seen.get(a.host)!;
  });
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
  handshake: Handshake,
  admit: (reader: Reader, peer: number) => Promise<boolean>,
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
  const taken = new Set<number>();
  let closed = false;
  const unlinked = (peer: number) => o.rank !== 0 && o.linked !== undefined && !o.linked(peer);
  const judge = (tokenMatches: boolean, peer: number | undefined): Answer =>
    !tokenMatches ? "wrongToken" : peer === undefined || peer >= o.size || peer === o.rank ||
        peer < o.rank || unlinked(peer)
      ? "badRank"
      : taken.has(peer) || closed
      ? "rankTaken"
      : "accepted";
  const greet = async (conn: Deno.TcpConn) => {
    let slot: number | undefined;
    try {
      const reader = new Reader(conn, deadline);
      const peer = await handshake.answer(reader, o, judge);
      if (peer === undefined) return closeQuietly(conn);
      taken.add(slot = peer);
      if (await admit(reader, peer)) return;
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

/** Connects to `peer` and greets it, retrying until the deadline (it may be starting). */
async function dial(
  o: MeshOptions,
  handshake: Handshake,
  peer: number,
  hostname: string,
  port: number,
  deadline: number,
): Promise<Reader> {
  let last = "";
  while (Date.now() < deadline) {
    let conn: Deno.TcpConn | undefined;
    try {
      conn = await Deno.connect({ hostname, port });
      conn.setNoDelay(true);
      const reader = new Reader(conn, deadline);
      const answer = await handshake.offer(reader, o, hostname, port);
      if (answer === "accepted") return reader;
      closeQuietly(conn);
      if (answer === "wrongToken") {
        throw new CommError(`rank ${peer} at ${hostname}:${port} refused this rank's token`, {
          failedRank: peer,
        });
      }
      if (answer === "rankTaken") {
        throw new CommError(
          `rank ${peer} at ${hostname}:${port} already has a connection from rank ${o.rank}: ` +
            `is another process running as rank ${o.rank}?`,
          { failedRank: peer },
        );
      }
      last = answer ? `it refused rank ${o.rank} of ${o.size}` : "it closed the connection";
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

/** The table from rank 0. */
async function readTable(master: Reader, handshake: Handshake, size: number): Promise<Address[]> {
  const message = await withDeadline(
    handshake.read(master, MAX_TABLE_BYTES, false),
    master.deadline,
    "rank 0 never sent the rendezvous table",
    0,
  );
  if (message === CLOSED_FIRST) {
    throw new CommError(
      "rank 0 gave up on the rendezvous: it closed the connection before sending the table " +
        "(it timed out waiting for the other ranks, or failed; its own error says which)",
      { failedRank: 0 },
    );
  }
  const json = typeof message === "string"
    ? { problem: message }
    : readJson(message, false, MAX_TABLE_BYTES);
  const table = "problem" in json ? json.problem : checkTable(json.value, size);
  if (typeof table === "string") {
    throw new CommError(`rank 0 sent a bad rendezvous table: ${table}`, { failedRank: 0 });
  }
  return table;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && a.every((x, i) => x === b[i]);
}

function ranks(size: number): number[] {
  return Array.from({ length: size }, (_, r) => r);
}
