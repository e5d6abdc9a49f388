/**
 * The `tcp` transport: ranks in separate processes (or hosts) linked by Deno's native TCP, one
 * full-duplex connection per pair, with its own length-prefixed framing: every frame starts with
 * a {@linkcode TCP_HEADER_BYTES}-byte header, followed by a message's bytes (or a fragment's) or a
 * failure notice's reason. The engine (reads, writes, socket calls, goodbyes) is stream.ts.
 * @module
 */

import { ALLREDUCE_RECURSIVE_DOUBLING } from "../../primitives/collectives/allreduce_recursive_doubling.ts";
import { MAX_BYTES } from "../../primitives/types.ts";
import { StreamTransport } from "./stream.ts";
import { bufferView, type Frame, type Route, type Wire } from "./stream_wire.ts";
import { connectStreamMesh } from "./stream_mesh.ts";
import { PROCESS_MESH } from "../../primitives/transports/transport.ts";
import { TCP_HANDSHAKE } from "./tcp_connect.ts";
import type { ProcessesTransport, TransportFacts } from "../../primitives/transports/transport.ts";

/**
 * Frame header: kind, tag, payload length, the sender's call stamp, and a data frame's message
 * length or a failure notice's rank (u32, u32, f64 ×3). A goodbye (`closing`) puts its digest
 * where the tag goes, its last call's stamp where the length goes, its calls + 1 (0: none) where
 * the stamp goes and the messages it took last.
 */
export const TCP_HEADER_BYTES = 32;
/** Frame kinds, as the header's first word. */
const TCP_KIND = {
  data: 0xdcc1,
  probe: 0xdcc2,
  abort: 0xdcc3,
  bye: 0xdcc4,
  closing: 0xdcc5,
} as const;
/** Longest failure reason a notice carries. */
export const MAX_REASON_BYTES = 1024;

/** The `tcp` frame format (see the module docs). */
export const TCP_WIRE: Wire = {
  maxHeadBytes: TCP_HEADER_BYTES + MAX_REASON_BYTES,

  write(into, f) {
    if (!(f.kind in TCP_KIND)) throw new Error(`a ${f.kind} frame is never written`);
    const v = bufferView(into), o = into.byteOffset;
    const reason = f.kind === "abort"
      ? new TextEncoder().encode(f.reason).subarray(0, MAX_REASON_BYTES)
      : undefined;
    v.setUint32(o, TCP_KIND[f.kind as keyof typeof TCP_KIND], true);
    if (f.kind === "closing") {
      v.setUint32(o + 4, f.summary?.digest ?? 0, true);
      v.setFloat64(o + 8, f.summary?.last ?? 0, true);
      v.setFloat64(o + 16, f.summary ? f.summary.calls + 1 : 0, true);
      v.setFloat64(o + 24, f.taken, true);
      return TCP_HEADER_BYTES;
    }
    v.setUint32(o + 4, "tag" in f ? f.tag : 0, true);
    v.setFloat64(o + 8, f.kind === "data" ? f.length : reason?.byteLength ?? 0, true);
    v.setFloat64(o + 16, "stamp" in f ? f.stamp : 0, true);
    v.setFloat64(o + 24, f.kind === "abort" ? f.rank : f.kind === "data" ? f.total : 0, true);
    if (reason) into.set(reason, TCP_HEADER_BYTES);
    return TCP_HEADER_BYTES + (reason?.byteLength ?? 0);
  },

  read(bytes, size, at = 0, end = bytes.byteLength) {
    if (end - at < TCP_HEADER_BYTES) return undefined;
    const v = bufferView(bytes), o = bytes.byteOffset + at;
    const kind = v.getUint32(o, true), tag = v.getUint32(o + 4, true);
    const length = v.getFloat64(o + 8, true), stamp = v.getFloat64(o + 16, true);
    const last = v.getFloat64(o + 24, true); // a data frame's message length, a notice's rank
    if (kind === TCP_KIND.closing) return readGoodbye(tag, length, stamp, last);
    const limit = kind === TCP_KIND.data
      ? MAX_BYTES
      : kind === TCP_KIND.abort
      ? MAX_REASON_BYTES
      : kind === TCP_KIND.probe || kind === TCP_KIND.bye
      ? 0
      : -1;
    if (limit < 0) return "bad magic";
    if (!Number.isSafeInteger(length) || length < 0 || length > limit) {
      return `${length}-byte payload (at most ${limit} accepted)`;
    }
    if (!Number.isSafeInteger(stamp) || stamp < 0) return `call stamp ${stamp}`;
    let frame: Frame;
    if (kind === TCP_KIND.data) {
      if (!Number.isSafeInteger(last) || last < 0 || last > MAX_BYTES) {
        return `${last}-byte message (at most ${MAX_BYTES} accepted)`;
      }
      frame = { kind: "data", tag, length, total: last, stamp };
    } else if (kind === TCP_KIND.probe) frame = { kind: "probe", tag, stamp };
    else if (kind === TCP_KIND.bye) frame = { kind: "bye" };
    else {
      if (!(Number.isInteger(last) && last >= 0 && last < size)) {
        return `failure notice naming rank ${last}`;
      }
      // The reason is part of the head: the notice is acted on once all of it is here.
      if (end - at < TCP_HEADER_BYTES + length) return undefined;
      const text = bytes.subarray(at + TCP_HEADER_BYTES, at + TCP_HEADER_BYTES + length);
      frame = { kind: "abort", rank: last, reason: new TextDecoder().decode(text) };
      return { frame, bytes: TCP_HEADER_BYTES + length };
    }
    return { frame, bytes: TCP_HEADER_BYTES };
  },
};

/** A goodbye's header fields (see {@linkcode TCP_HEADER_BYTES}) as its frame. */
function readGoodbye(
  digest: number,
  lastStamp: number,
  callsPlusOne: number,
  taken: number,
): { frame: Frame; bytes: number } | string {
  const counts = [lastStamp, callsPlusOne, taken];
  if (!counts.every((n) => Number.isSafeInteger(n) && n >= 0)) return "a malformed goodbye";
  const summary = callsPlusOne === 0
    ? undefined
    : { calls: callsPlusOne - 1, digest, last: lastStamp };
  return { frame: { kind: "closing", summary, taken }, bytes: TCP_HEADER_BYTES };
}

const BOTH_WAYS: Route = { wire: TCP_WIRE, sends: true, receives: true };

/** Message transport over a TCP mesh (see the module docs). */
export class TcpTransport extends StreamTransport {
  readonly name = "tcp" as const;
  readonly facts: TransportFacts = TCP;

  /** One connection per pair, carrying both ways. */
  protected route(): Route {
    return BOTH_WAYS;
  }
}

/** The `tcp` transport: processes over TCP connections with their own frames (see `TransportFacts`). */
export const TCP: ProcessesTransport & { name: "tcp" } = {
  ...PROCESS_MESH,
  name: "tcp",
  summary: "processes (or hosts) over TCP, one connection per pair, frames of their own",
  // Between 2 processes recursive doubling beats the ring up to 1 MiB (docs/auto.md).
  winsBelow: [{
    algorithm: ALLREDUCE_RECURSIVE_DOUBLING,
    bound: (size, measured) => size === 2 ? 2 ** 20 : measured,
  }],
  async connect(o) {
    const mesh = await connectStreamMesh(o, TCP_HANDSHAKE);
    return new TcpTransport(o.rank, o.size, mesh.connections, {
      timeoutMs: o.timeoutMs,
      hosts: mesh.hosts,
    });
  },
};
