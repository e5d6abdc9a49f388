/**
 * A small HTTP/1.1 server for dccl's own pages (page_server.ts): one request per connection
 * (`Connection: close`), a request's head read within a deadline and a size bound, at most so many
 * connections at once, and a handler that answers or takes the connection over (a WebSocket
 * upgrade). Deno's own server keeps a connection whose headers never end open for as long as the
 * client likes, one file descriptor each, so a local user could run the page's server out of
 * descriptors; this one closes such a connection at the deadline and refuses connections beyond
 * the cap.
 * @module
 */

import { closeQuietly, writeAll } from "../../deno/mod.ts";

/** A request's head: its method, target and headers (names lower-cased). */
export interface HttpRequest {
  method: string;
  /** The request target as sent (a path, with its query). */
  target: string;
  headers: Map<string, string>;
  /** The connection, for a handler that takes it over (it then owns closing it). */
  conn: Deno.Conn;
}

/** A response. */
export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  /** The body (a stream is sent as it comes); none for HEAD or an empty one. */
  body?: Uint8Array | ReadableStream<Uint8Array>;
  /** Bytes of the body, for `content-length`. */
  length?: number;
}

/** What a handler answers: a response, or `taken` when it took the connection over. */
export type HttpAnswer = HttpResponse | "taken";

/** Options of {@linkcode serveHttp}. */
export interface HttpServerOptions {
  hostname: string;
  port: number;
  /** Milliseconds a connection has to send its request's head. @default {10000} */
  headerTimeoutMs?: number;
  /** Connections open at once; more are closed as they come. @default {128} */
  maxConnections?: number;
  /** Answers one request. */
  handler(request: HttpRequest): HttpAnswer | Promise<HttpAnswer>;
  /** Hears what went wrong with a connection (a slow or bad head, the cap). */
  log?(line: string): void;
}

/** A running server. */
export interface HttpServer {
  addr: Deno.NetAddr;
  /** Stops accepting and closes every connection open. */
  close(): Promise<void>;
}

const HEAD_END = new TextEncoder().encode("\r\n\r\n");
/** Longest request head accepted. */
const MAX_HEAD_BYTES = 16 * 1024;
const REASONS: Record<number, string> = {
  200: "OK",
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  409: "Conflict",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

/** Listens on `hostname:port` and serves each connection's one request with `handler`. */
export function serveHttp(options: HttpServerOptions): HttpServer {
  const listener = Deno.listen({ hostname: options.hostname, port: options.port });
  const open = new Set<Deno.Conn>();
  const max = options.maxConnections ?? 128;
  const log = options.log ?? (() => {});
  let capped = false;
  const accepting = (async () => {
    for await (const conn of listener) {
      if (open.size >= max) {
        if (!capped) log(`${max} connections open: refusing more until some close`);
        capped = true;
        closeQuietly(conn);
        continue;
      }
      capped = false;
      open.add(conn);
      serveOne(conn, options, log).finally(() => open.delete(conn));
    }
  })().catch(() => {});
  return {
    addr: listener.addr as Deno.NetAddr,
    async close() {
      try {
        listener.close();
      } catch { /* closed already */ }
      for (const conn of open) closeQuietly(conn);
      await accepting;
    },
  };
}

async function serveOne(conn: Deno.Conn, o: HttpServerOptions, log: (l: string) => void) {
  let taken = false;
  const timeoutMs = o.headerTimeoutMs ?? 10_000;
  const late = setTimeout(() => {
    log(`a connection sent no whole request head within ${timeoutMs / 1000} s: closed`);
    closeQuietly(conn);
  }, timeoutMs);
  try {
    const head = await readHead(conn);
    clearTimeout(late);
    if (head === "too long") return await respond(conn, plainAnswer(431, "request head too long"));
    if (!head) return;
    const request = parseHead(head, conn);
    if (!request) return await respond(conn, plainAnswer(400, "not an HTTP request"));
    const answer = await o.handler(request);
    if (answer === "taken") {
      taken = true;
      return;
    }
    await respond(conn, answer, request.method === "HEAD");
  } catch (e) {
    if (!(e instanceof Deno.errors.BadResource || e instanceof Deno.errors.ConnectionReset)) {
      log(`a request failed: ${(e as Error).message}`);
    }
  } finally {
    clearTimeout(late);
    if (!taken) closeQuietly(conn);
  }
}

/** A request's head up to its blank line; undefined when the connection ends first. */
async function readHead(conn: Deno.Conn): Promise<Uint8Array | "too long" | undefined> {
  const buf = new Uint8Array(MAX_HEAD_BYTES);
  let filled = 0;
  for (;;) {
    if (filled === buf.length) return "too long";
    const n = await conn.read(buf.subarray(filled));
    if (n === null) return undefined;
    const from = Math.max(0, filled - 3);
    filled += n;
    const end = indexOf(buf.subarray(0, filled), HEAD_END, from);
    if (end >= 0) return buf.subarray(0, end);
  }
}

function indexOf(hay: Uint8Array, needle: Uint8Array, from: number): number {
  outer: for (let i = from; i <= hay.length - needle.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

function parseHead(bytes: Uint8Array, conn: Deno.Conn): HttpRequest | undefined {
  const [line, ...rest] = new TextDecoder().decode(bytes).split("\r\n");
  const m = line.match(/^([A-Z]+) (\S+) HTTP\/1\.[01]$/);
  if (!m) return undefined;
  const headers = new Map<string, string>();
  for (const h of rest) {
    const colon = h.indexOf(":");
    if (colon <= 0) return undefined;
    headers.set(h.slice(0, colon).trim().toLowerCase(), h.slice(colon + 1).trim());
  }
  return { method: m[1], target: m[2], headers, conn };
}

/** A plain-text answer. */
export function plainAnswer(
  status: number,
  text: string,
  headers: Record<string, string> = {},
): HttpResponse {
  const body = new TextEncoder().encode(`${text}\n`);
  return {
    status,
    headers: { "content-type": "text/plain; charset=utf-8", ...headers },
    body,
    length: body.length,
  };
}

async function respond(conn: Deno.Conn, answer: HttpResponse, head = false): Promise<void> {
  const lines = [`HTTP/1.1 ${answer.status} ${REASONS[answer.status] ?? "Status"}`];
  for (const [k, v] of Object.entries(answer.headers)) lines.push(`${k}: ${v}`);
  if (answer.length !== undefined) lines.push(`content-length: ${answer.length}`);
  lines.push("connection: close");
  await writeAll(conn, new TextEncoder().encode(lines.join("\r\n") + "\r\n\r\n"));
  const body = answer.body;
  if (head || !body) {
    if (body instanceof ReadableStream) await body.cancel();
    return;
  }
  if (body instanceof Uint8Array) return await writeAll(conn, body);
  for await (const chunk of body) await writeAll(conn, chunk);
}
