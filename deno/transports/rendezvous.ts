/**
 * What the process meshes (`ws`, `tcp`) share at rendezvous. What ranks trust is checked
 * strictly: the run's token (compared in constant time over a fixed-length digest, so a wrong
 * guess learns nothing, its length included), a rank number (plain decimal only), and the
 * messages that carry addresses. Every check returns the problem as text instead of throwing, so
 * callers can refuse a connection and name the peer.
 * @module
 */

import type { MeshOptions } from "../../primitives/transports/transport.ts";
import { createHash, timingSafeEqual } from "node:crypto";
import { CommTimeoutError } from "../../primitives/errors.ts";
import { DEFAULT_TIMEOUT_MS } from "../../primitives/types.ts";

/** A rank's listening address. */
export interface Address {
  host: string;
  port: number;
}

/** Largest rendezvous message a rank accepts (an address; the table is 64 B × ranks at most). */
export const MAX_ADDRESS_BYTES = 1024;
/** The address table of up to 256 ranks. */
export const MAX_TABLE_BYTES = 256 * 64;
/** What a rendezvous read says when the connection closed before a message began. */
export const CLOSED_FIRST = "nothing (the connection closed)";

/** Where and how a rank joins a process mesh (`ws`, `tcp`). */

/** The SHA-256 digest tokens are compared by. */
export function tokenDigest(token: string): Uint8Array {
  return createHash("sha256").update(token).digest();
}

/** Whether `presented` is the token whose digest is `expected`, in time independent of both. */
export function tokenMatches(presented: unknown, expected: Uint8Array): boolean {
  return timingSafeEqual(tokenDigest(typeof presented === "string" ? presented : ""), expected);
}

/**
 * The rank a peer claims, if `text` is a plain decimal rank of a `size`-rank group (no sign,
 * exponent, hex, spaces or leading zeros: `1e0`, `0x1`, `+1`, `01` and ` 1` are all refused).
 */
export function parseRank(text: unknown, size: number): number | undefined {
  if (typeof text !== "string" || !/^(0|[1-9][0-9]{0,5})$/.test(text)) return undefined;
  const rank = Number(text);
  return rank < size ? rank : undefined;
}

const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.?)+$|^[0-9A-Fa-f:.]+$/;

/** `value` as an address, or why it is not one. */
export function checkAddress(value: unknown): Address | string {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return "an address must be an object {host, port}";
  }
  const { host, port } = value as Record<string, unknown>;
  if (typeof host !== "string" || host.length === 0 || host.length > 253 || !HOST.test(host)) {
    return `host ${JSON.stringify(host)?.slice(0, 40)} is not a host name or IP address`;
  }
  if (!Number.isInteger(port) || (port as number) < 1 || (port as number) > 65535) {
    return `port ${JSON.stringify(port)?.slice(0, 20)} is not a port from 1 to 65535`;
  }
  return { host, port: port as number };
}

/** A rendezvous message's JSON value, or why it is not acceptable (binary, too long, not JSON). */
export function readJson(
  data: Uint8Array,
  isBinary: boolean,
  maxBytes: number,
): { value: unknown } | { problem: string } {
  if (isBinary) return { problem: "a binary message where text was expected" };
  if (data.byteLength > maxBytes) {
    return { problem: `a ${data.byteLength}-byte message (at most ${maxBytes} accepted)` };
  }
  try {
    return { value: JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(data)) };
  } catch {
    return { problem: "a message that is not JSON" };
  }
}

/** The table rank 0 sends (every rank's address, by rank), or why it is not one. */
export function checkTable(value: unknown, size: number): Address[] | string {
  if (!Array.isArray(value) || value.length !== size) {
    return `the address table must list ${size} ranks`;
  }
  const table: Address[] = [];
  for (const [r, entry] of value.entries()) {
    const a = checkAddress(entry);
    if (typeof a === "string") return `rank ${r}'s entry: ${a}`;
    table.push(a);
  }
  return table;
}

/** Resolves once `done()` holds (checked whenever `subscribe`'s callback runs), or times out. */
export function waitFor(
  done: () => boolean,
  subscribe: (notify: () => void) => void,
  deadline: number,
  why: () => string,
  blame?: () => number | undefined,
): Promise<void> {
  if (done()) return Promise.resolve();
  return withDeadline(
    new Promise<void>((resolve) => subscribe(() => done() && resolve())),
    deadline,
    why,
    blame,
  );
}

/** `p`, or a `CommTimeoutError` saying `why` (blaming `failedRank`) at `deadline`. */
export function withDeadline<T>(
  p: Promise<T>,
  deadline: number,
  why: string | (() => string),
  failedRank?: number | (() => number | undefined),
): Promise<T> {
  let timer: ReturnType<typeof setTimeout>;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new CommTimeoutError(typeof why === "string" ? why : why(), {
            failedRank: typeof failedRank === "function" ? failedRank() : failedRank,
          }),
        ),
      Math.max(0, deadline - Date.now()),
    );
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Rank 0's wait for every other rank's address. Its timeout names the ranks that never arrived
 * at `port`, and why any that connected were dropped (`problems`), blaming the first missing.
 */
export function awaitArrivals(
  o: MeshOptions,
  port: number,
  deadline: number,
  arrived: ReadonlyMap<number, Address>,
  problems: ReadonlyMap<number, string>,
  subscribe: (notify: () => void) => void,
): Promise<void> {
  const missing = () =>
    Array.from({ length: o.size }, (_, r) => r).filter((r) => r !== 0 && !arrived.has(r));
  return waitFor(
    () => arrived.size === o.size - 1,
    subscribe,
    deadline,
    () => {
      const absent = missing();
      const why = absent.filter((r) => problems.has(r))
        .map((r) => `; rank ${r} connected but ${problems.get(r)}`).join("");
      return `rendezvous timed out after ${o.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms: rank${
        absent.length > 1 ? "s" : ""
      } ${absent.join(", ")} of ${o.size} never arrived at ${o.masterAddr}:${port}${why}`;
    },
    () => missing()[0],
  );
}

/**
 * The host this rank tells rank 0 to reach it at: its `bind` address, or, when it listens on
 * every interface, the local address of its connection to rank 0.
 */
export function advertisedHost(bind: string | undefined, local: string): string {
  return !bind || bind === "0.0.0.0" || bind === "::" ? local : bind;
}
