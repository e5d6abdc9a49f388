/**
 * Builds the `ws` mesh (stream_mesh.ts): every rank dials the lower ranks, so each pair has one
 * connection, carrying both ways. Each connection opens with a WebSocket upgrade (RFC 6455 §4) that presents
 * the run's token and the dialer's rank as headers; the listener answers 101, or 401 (wrong
 * token), 400 (bad rank or not an upgrade) or 409 (rank already connected) and closes. Rendezvous
 * messages are text frames, masked from the client as RFC 6455 requires.
 *
 * Why the upgrade and frames are dccl's own rather than npm `ws`'s: `ws` runs on Deno's Node
 * sockets, which keep a read in flight that nothing else may share, so the transport could not
 * drive the socket with its own calls (docs/transports/ws.md); these frames go through the same
 * engine as `tcp`. The tests check both halves against npm `ws`: its client connects to a rank,
 * and it parses what a rank writes.
 * @module
 */

import { createHash } from "node:crypto";
import { CLOSED_FIRST, parseRank, tokenDigest, tokenMatches } from "./rendezvous.ts";
import { writeAll } from "./stream_link.ts";
import type { Answer, Handshake, Reader } from "./stream_mesh.ts";
import { headBytes, headProblem, OPCODE, readFrameHead, unmask, writeFrame } from "./ws_frames.ts";

const HEADER_TOKEN = "x-dccl-token";
const HEADER_RANK = "x-dccl-rank";
/** Longest request or response head accepted. */
const MAX_HTTP_HEAD_BYTES = 8192;
const HEAD_END = new TextEncoder().encode("\r\n\r\n");
/** RFC 6455's GUID, hashed with the client's key into `Sec-WebSocket-Accept`. */
const ACCEPT_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
const STATUS: Record<Answer, string> = {
  accepted: "101 Switching Protocols",
  wrongToken: "401 Unauthorized",
  badRank: "400 Bad Request",
  rankTaken: "409 Conflict",
};

/** `Sec-WebSocket-Accept` for a client's `Sec-WebSocket-Key`. */
export function acceptKey(key: string): string {
  return createHash("sha1").update(key + ACCEPT_GUID).digest("base64");
}

/** An HTTP head: its first line and its headers (names lower-cased). */
function parseHead(bytes: Uint8Array): { line: string; headers: Map<string, string> } {
  const [line, ...rest] = new TextDecoder().decode(bytes).split("\r\n");
  const headers = new Map<string, string>();
  for (const h of rest) {
    const colon = h.indexOf(":");
    if (colon > 0) headers.set(h.slice(0, colon).trim().toLowerCase(), h.slice(colon + 1).trim());
  }
  return { line, headers };
}

function writeHead(r: Reader, lines: string[]): Promise<void> {
  return writeAll(r.conn, new TextEncoder().encode(lines.join("\r\n") + "\r\n\r\n"));
}

export const WS_HANDSHAKE: Handshake = {
  async offer(r, o, host, port) {
    const key = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
    await writeHead(r, [
      "GET / HTTP/1.1",
      `Host: ${host.includes(":") ? `[${host}]` : host}:${port}`,
      "Upgrade: websocket",
      "Connection: Upgrade",
      `Sec-WebSocket-Key: ${key}`,
      "Sec-WebSocket-Version: 13",
      `${HEADER_TOKEN}: ${o.token}`,
      `${HEADER_RANK}: ${o.rank}`,
    ]);
    const bytes = await r.through(HEAD_END, MAX_HTTP_HEAD_BYTES);
    if (!bytes) return null;
    const { line, headers } = parseHead(bytes);
    const status = line.match(/^HTTP\/1\.1 (\d{3})/)?.[1];
    const answer = (Object.keys(STATUS) as Answer[]).find((a) => STATUS[a].startsWith(status!));
    if (!answer) throw new Error(`it answered "${line.slice(0, 60)}"`);
    if (answer === "accepted" && headers.get("sec-websocket-accept") !== acceptKey(key)) {
      throw new Error("its Sec-WebSocket-Accept does not match the key");
    }
    return answer;
  },

  async answer(r, o, judge) {
    const bytes = await r.through(HEAD_END, MAX_HTTP_HEAD_BYTES);
    if (!bytes) return undefined;
    const { line, headers } = parseHead(bytes);
    const key = headers.get("sec-websocket-key") ?? "";
    const upgrade = /^GET \S+ HTTP\/1\.1$/.test(line) &&
      /\bwebsocket\b/i.test(headers.get("upgrade") ?? "") &&
      /\bupgrade\b/i.test(headers.get("connection") ?? "") &&
      headers.get("sec-websocket-version") === "13" && atobLength(key) === 16;
    const peer = parseRank(headers.get(HEADER_RANK), o.size);
    const answer = upgrade
      ? judge(tokenMatches(headers.get(HEADER_TOKEN), tokenDigest(o.token)), peer)
      : "badRank";
    await writeHead(
      r,
      answer === "accepted"
        ? [
          `HTTP/1.1 ${STATUS.accepted}`,
          "Upgrade: websocket",
          "Connection: Upgrade",
          `Sec-WebSocket-Accept: ${acceptKey(key)}`,
        ]
        : [`HTTP/1.1 ${STATUS[answer]}`, "Connection: close", "Content-Length: 0"],
    );
    return answer === "accepted" ? peer : undefined;
  },

  write(conn, message, fromDialer) {
    const frame = new Uint8Array(14 + message.byteLength);
    const n = writeFrame(
      frame,
      OPCODE.text,
      message.byteLength,
      message,
      fromDialer ? "random" : "none",
    );
    return writeAll(conn, frame.subarray(0, n));
  },

  async read(r, maxBytes, fromDialer) {
    const start = await r.exactly(2);
    if (!start) return CLOSED_FIRST;
    const rest = await r.exactly(headBytes(start[1]) - 2);
    if (!rest) return "a frame cut short (the connection closed)";
    const bytes = new Uint8Array(2 + rest.byteLength);
    bytes.set(start);
    bytes.set(rest, 2);
    const head = readFrameHead(bytes)!;
    if (typeof head === "string") return head;
    // A message from the dialer comes to the listener, the server of the connection.
    const problem = headProblem(head, !fromDialer);
    if (problem) return problem;
    if (head.opcode === OPCODE.binary) return "a binary message where text was expected";
    if (head.opcode !== OPCODE.text) return `a frame with opcode ${head.opcode}, not text`;
    if (head.length > maxBytes) {
      return `a ${head.length}-byte message (at most ${maxBytes} accepted)`;
    }
    const payload = await r.exactly(head.length);
    return payload ? unmask(payload, head.mask) : "a message cut short (the connection closed)";
  },
};

/** How many bytes the base64 `text` decodes to, or -1 if it is not base64. */
function atobLength(text: string): number {
  try {
    return atob(text).length;
  } catch {
    return -1;
  }
}
