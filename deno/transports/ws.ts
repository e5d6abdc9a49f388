/**
 * The `ws` transport: ranks in separate processes (or hosts) linked by WebSockets (RFC 6455).
 * Each pair of ranks has one connection, carrying both ways (one socket a peer for the pump to
 * poll). The dialer, the connection's client, masks its messages with a zero key, which leaves
 * their bytes as they are (masking with a random one would cost a pass over every byte); its
 * control frames are masked with random keys, as RFC 6455 asks of clients. A message is
 * one binary frame, or several when large (each a whole WebSocket message): a
 * {@linkcode WS_HEADER_BYTES}-byte dccl header (kind, tag, the sender's call stamp, the message's
 * length) and the bytes. A rank that finishes closes with 1000; a failure notice is a close with
 * code 4000 + the failed rank and the reason. Any WebSocket implementation can read these frames
 * (the tests read them with npm `ws`). The engine (reads, writes, socket calls, goodbyes) is
 * stream.ts.
 * @module
 */

import { MAX_BYTES } from "../../primitives/types.ts";
import { StreamTransport } from "./stream.ts";
import {
  bufferView,
  type Frame,
  type MeshConnection,
  type Route,
  type Wire,
} from "./stream_wire.ts";
import {
  CLOSE_NORMAL,
  closeText,
  headProblem,
  type Masking,
  MAX_CONTROL_BYTES,
  OPCODE,
  readFrameHead,
  unmask,
  writeFrame,
  zeroMask,
} from "./ws_frames.ts";
import { connectStreamMesh } from "./stream_mesh.ts";
import { PROCESS_MESH } from "../../primitives/transports/transport.ts";
import type { ProcessesTransport, TransportFacts } from "../../primitives/transports/transport.ts";
import { WS_HANDSHAKE } from "./ws_connect.ts";

/**
 * dccl's header at the start of a binary frame's payload: kind, tag, stamp, and the length of the
 * message the frame's bytes belong to (u32, u32, f64, f64).
 */
export const WS_HEADER_BYTES = 24;
/**
 * Close codes from here on (private use, RFC 6455) say "the group failed because rank
 * `code − ABORT_CLOSE_BASE` did", with the reason as close text.
 */
export const ABORT_CLOSE_BASE = 4000;
const KIND = { data: 0xdcc1, probe: 0xdcc2, closing: 0xdcc3 } as const;
/**
 * The WebSocket frame format of one side of a connection: a client masks what it writes and
 * reads only unmasked frames; a server the other way round.
 */
export class WsWire implements Wire {
  readonly maxHeadBytes = 14 + MAX_CONTROL_BYTES;
  readonly client: boolean;
  /** How this side masks its messages, and its control frames. */
  readonly #messages: Masking;
  readonly #control: Masking;

  constructor(client: boolean) {
    this.client = client;
    this.#messages = client ? "zero" : "none";
    this.#control = client ? "random" : "none";
  }

  write(into: Uint8Array, f: Frame): number {
    if (f.kind === "data" || f.kind === "probe" || f.kind === "closing") {
      const closing = f.kind === "closing";
      const length = WS_HEADER_BYTES + (f.kind === "data" ? f.length : closing ? 8 : 0);
      const at = writeFrame(into, OPCODE.binary, length, undefined, this.#messages);
      const v = bufferView(into), o = into.byteOffset + at;
      v.setUint32(o, KIND[f.kind], true);
      // A goodbye: its digest, its calls + 1 (0: none), the messages it took and, as its
      // payload, its last call's stamp.
      v.setUint32(o + 4, closing ? f.summary?.digest ?? 0 : f.tag, true);
      v.setFloat64(o + 8, closing ? (f.summary ? f.summary.calls + 1 : 0) : f.stamp, true);
      v.setFloat64(o + 16, f.kind === "data" ? f.total : closing ? f.taken : 0, true);
      if (!closing) return at + WS_HEADER_BYTES;
      v.setFloat64(o + WS_HEADER_BYTES, f.summary?.last ?? 0, true);
      return at + WS_HEADER_BYTES + 8;
    }
    if (f.kind === "pong") {
      return writeFrame(into, OPCODE.pong, f.payload.byteLength, f.payload, this.#control);
    }
    if (f.kind !== "abort" && f.kind !== "bye") {
      throw new Error(`a ${f.kind} frame is never written`);
    }
    const reason = new TextEncoder().encode(f.kind === "abort" ? closeText(f.reason) : "");
    const payload = new Uint8Array(2 + reason.byteLength);
    new DataView(payload.buffer).setUint16(
      0,
      f.kind === "abort" ? ABORT_CLOSE_BASE + f.rank : CLOSE_NORMAL,
    );
    payload.set(reason, 2);
    return writeFrame(into, OPCODE.close, payload.byteLength, payload, this.#control);
  }

  read(
    bytes: Uint8Array,
    size: number,
    start = 0,
    end = bytes.byteLength,
  ): { frame: Frame; bytes: number } | string | undefined {
    const head = readFrameHead(bytes, start, end);
    if (head === undefined || typeof head === "string") return head;
    const { opcode, length, at } = head;
    const problem = headProblem(head, this.client);
    if (problem) return problem;
    if (opcode === OPCODE.binary) {
      // The engine reads a message's bytes straight into their buffer: they come unmasked.
      if (!zeroMask(head.mask)) return "a message masked with a key other than zero";
      if (length < WS_HEADER_BYTES) return `${length}-byte frame is shorter than its header`;
      if (end - start < at + WS_HEADER_BYTES) return undefined;
      const v = bufferView(bytes), o = bytes.byteOffset + start + at;
      const kind = v.getUint32(o, true), tag = v.getUint32(o + 4, true);
      const stamp = v.getFloat64(o + 8, true), total = v.getFloat64(o + 16, true);
      const payload = length - WS_HEADER_BYTES;
      if (!Number.isSafeInteger(stamp) || stamp < 0) return `call stamp ${stamp}`;
      if (kind === KIND.closing) {
        if (payload !== 8 || !Number.isSafeInteger(total) || total < 0) {
          return "a malformed goodbye";
        }
        if (end - start < at + length) return undefined;
        const last = v.getFloat64(o + WS_HEADER_BYTES, true);
        if (!Number.isSafeInteger(last) || last < 0) return "a malformed goodbye";
        const summary = stamp === 0 ? undefined : { calls: stamp - 1, digest: tag, last };
        return { frame: { kind: "closing", summary, taken: total }, bytes: at + length };
      }
      if (kind !== KIND.data && kind !== KIND.probe) return "bad magic";
      const limit = kind === KIND.data ? MAX_BYTES : 0;
      if (!Number.isSafeInteger(total) || total < 0 || total > limit) {
        return `${total}-byte ${kind === KIND.data ? "message" : "probe"}`;
      }
      if (payload > limit) return `${payload}-byte ${kind === KIND.data ? "message" : "probe"}`;
      const frame: Frame = kind === KIND.data
        ? { kind: "data", tag, length: payload, total, stamp }
        : { kind: "probe", tag, stamp };
      return { frame, bytes: at + WS_HEADER_BYTES };
    }
    if (opcode === OPCODE.text) return "a text frame";
    if (opcode !== OPCODE.close && opcode !== OPCODE.ping && opcode !== OPCODE.pong) {
      return `reserved opcode ${opcode}`;
    }
    if (length > MAX_CONTROL_BYTES) return `a ${length}-byte control frame`;
    if (end - start < at + length) return undefined;
    const payload = unmask(bytes.slice(start + at, start + at + length), head.mask);
    const whole = at + length;
    if (opcode === OPCODE.ping) return { frame: { kind: "ping", payload }, bytes: whole };
    if (opcode === OPCODE.pong) return { frame: { kind: "pong", payload }, bytes: whole };
    if (length === 1) return "a 1-byte close frame";
    const code = length === 0 ? 1005 : new DataView(payload.buffer).getUint16(0);
    const reason = new TextDecoder().decode(payload.subarray(2));
    if (code === CLOSE_NORMAL) return { frame: { kind: "bye" }, bytes: whole };
    if (code >= ABORT_CLOSE_BASE && code < ABORT_CLOSE_BASE + 1000) {
      const rank = code - ABORT_CLOSE_BASE;
      if (rank >= size) return `close code ${code} naming rank ${rank}`;
      return { frame: { kind: "abort", rank, reason }, bytes: whole };
    }
    const why = `closed (code ${code}${reason ? `: ${reason}` : ""})`;
    return { frame: { kind: "closed", reason: why }, bytes: whole };
  }
}

const AS_SERVER: Route = { wire: new WsWire(false), sends: true, receives: true };
const AS_CLIENT: Route = { wire: new WsWire(true), sends: true, receives: true };

/** Message transport over a WebSocket mesh (see the module docs). */
export class WsTransport extends StreamTransport {
  readonly name = "ws" as const;
  readonly facts: TransportFacts = WS;

  /** This rank is the client of the connections it dialed, the server of those it accepted. */
  protected route(c: MeshConnection): Route {
    return c.dialed ? AS_CLIENT : AS_SERVER;
  }
}

/** The `ws` transport: processes over WebSockets (see `TransportFacts`). */
export const WS: ProcessesTransport & { name: "ws" } = {
  ...PROCESS_MESH,
  name: "ws",
  summary: "processes (or hosts) over WebSockets (RFC 6455), one connection per pair",
  async connect(o) {
    const mesh = await connectStreamMesh(o, WS_HANDSHAKE);
    return new WsTransport(o.rank, o.size, mesh.connections, {
      timeoutMs: o.timeoutMs,
      hosts: mesh.hosts,
    });
  },
};
