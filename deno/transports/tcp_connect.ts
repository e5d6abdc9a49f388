/**
 * Builds the `tcp` mesh (stream_mesh.ts): one connection per pair of ranks, opened by the higher
 * rank. Each connection opens with a fixed-size hello (magic, the dialer's rank, the SHA-256
 * digest of the run's token) that the listener answers with one status byte; rendezvous messages
 * are length-prefixed.
 * @module
 */

import { timingSafeEqual } from "node:crypto";
import { CLOSED_FIRST, tokenDigest } from "./rendezvous.ts";
import { writeAll } from "./stream_link.ts";
import type { Answer, Handshake } from "./stream_mesh.ts";

const HELLO_MAGIC = 0x74636364; // "dcct"
/** Magic, rank (u32 each) and the token's SHA-256 digest. */
const HELLO_BYTES = 40;
/** The listener's answer to a hello, as its status byte. */
const STATUS: Record<Answer, number> = { accepted: 0, wrongToken: 1, badRank: 2, rankTaken: 3 };

export const TCP_HANDSHAKE: Handshake = {
  async offer(r, o) {
    const hello = new Uint8Array(HELLO_BYTES);
    new DataView(hello.buffer).setUint32(0, HELLO_MAGIC, true);
    new DataView(hello.buffer).setUint32(4, o.rank, true);
    hello.set(tokenDigest(o.token), 8);
    await writeAll(r.conn, hello);
    const status = await r.exactly(1);
    if (!status) return null;
    const answer = (Object.keys(STATUS) as Answer[]).find((a) => STATUS[a] === status[0]);
    return answer ?? "badRank";
  },

  async answer(r, o, judge) {
    const hello = await r.exactly(HELLO_BYTES);
    if (!hello) return undefined;
    const view = new DataView(hello.buffer);
    const answer = judge(
      view.getUint32(0, true) === HELLO_MAGIC &&
        timingSafeEqual(hello.subarray(8), tokenDigest(o.token)),
      view.getUint32(4, true),
    );
    await writeAll(r.conn, Uint8Array.of(STATUS[answer]));
    return answer === "accepted" ? view.getUint32(4, true) : undefined;
  },

  write(conn, message) {
    const out = new Uint8Array(4 + message.byteLength);
    new DataView(out.buffer).setUint32(0, message.byteLength, true);
    out.set(message, 4);
    return writeAll(conn, out);
  },

  async read(r, maxBytes) {
    const head = await r.exactly(4);
    if (!head) return CLOSED_FIRST;
    const length = new DataView(head.buffer).getUint32(0, true);
    if (length > maxBytes) return `a ${length}-byte message (at most ${maxBytes} accepted)`;
    return await r.exactly(length) ?? "a message cut short (the connection closed)";
  },
};
