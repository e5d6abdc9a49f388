/**
 * WebSocket frames (RFC 6455 §5): reading a frame's head, checking it, unmasking a payload, and
 * writing a whole-message frame. What `ws`'s frames and its opening handshake share.
 * @module
 */

import { bufferView } from "./stream_wire.ts";

/** Frame opcodes (RFC 6455 §5.2). */
export const OPCODE = { text: 0x1, binary: 0x2, close: 0x8, ping: 0x9, pong: 0xa } as const;
/** Largest payload of a control frame. */
export const MAX_CONTROL_BYTES = 125;
/** The close code of a normal closure. */
export const CLOSE_NORMAL = 1000;

/** `text` cut to the 123 bytes of UTF-8 a WebSocket close frame carries. */
export function closeText(text: string): string {
  const bytes = new TextEncoder().encode(text);
  if (bytes.byteLength <= 123) return text;
  return new TextDecoder().decode(bytes.subarray(0, 120)).replace(/\uFFFD*$/, "") + "…";
}

/** A frame's first bytes, as read (RFC 6455 §5.2). */
export interface FrameHead {
  fin: boolean;
  /** RSV1–3 (no extension is agreed, so they must be 0). */
  reserved: number;
  opcode: number;
  /** The masking key, if the frame is masked. */
  mask?: Uint8Array;
  /** Payload bytes. */
  length: number;
  /** Where the payload starts. */
  at: number;
}

/** The length of a frame's head, from its second byte (length code and mask bit). */
export function headBytes(second: number): number {
  const code = second & 0x7f;
  return 2 + (code === 126 ? 2 : code === 127 ? 8 : 0) + (second & 0x80 ? 4 : 0);
}

/**
 * The head of the frame at `start` of `bytes` (0 unless given), whose bytes run to `end`:
 * undefined while incomplete. Its `at` counts from `start`.
 */
export function readFrameHead(
  bytes: Uint8Array,
  start = 0,
  end = bytes.byteLength,
): FrameHead | string | undefined {
  const first = bytes[start], second = bytes[start + 1];
  if (end - start < 2 || end - start < headBytes(second)) return undefined;
  const v = bufferView(bytes), o = bytes.byteOffset + start;
  let length = second & 0x7f, at = 2;
  if (length === 126) [length, at] = [v.getUint16(o + 2), 4];
  else if (length === 127) {
    const high = v.getUint32(o + 2);
    if (high >= 2 ** 21) return "a frame longer than 2^53 bytes";
    [length, at] = [high * 2 ** 32 + v.getUint32(o + 6), 10];
  }
  const masked = (second & 0x80) !== 0;
  return {
    fin: (first & 0x80) !== 0,
    reserved: first & 0x70,
    opcode: first & 0x0f,
    mask: masked ? bytes.subarray(start + at, start + at + 4) : undefined,
    length,
    at: masked ? at + 4 : at,
  };
}

/**
 * Why a frame with `head` cannot come to this side (a `client` reads only unmasked frames, a
 * server only masked ones), whatever its opcode; undefined if it can.
 */
export function headProblem(head: FrameHead, client: boolean): string | undefined {
  if (head.reserved) return "reserved bits set (no extension was agreed)";
  if (!head.fin || head.opcode === 0) return "a fragmented message";
  if ((head.mask !== undefined) === client) {
    return client ? "a masked frame from a server" : "an unmasked frame from a client";
  }
  return undefined;
}

/** Unmasks `payload` in place with `mask` (if the frame was masked); returns it. */
export function unmask(payload: Uint8Array, mask: Uint8Array | undefined): Uint8Array {
  if (mask) { for (let i = 0; i < payload.byteLength; i++) payload[i] ^= mask[i & 3]; }
  return payload;
}

/**
 * How a frame's payload is masked: not at all (a server's), with a fresh random key (a client's,
 * RFC 6455 §5.3), or with a zero key, which leaves the bytes as they are (a dccl rank's messages
 * to another: npm `ws` and Jetty offer the same for peers that need no protection from a
 * browser's scripts).
 */
export type Masking = "none" | "random" | "zero";

/** Whether a frame's masking key is zero: its payload is its bytes. */
export function zeroMask(mask: Uint8Array | undefined): boolean {
  return mask === undefined || (mask[0] | mask[1] | mask[2] | mask[3]) === 0;
}

/**
 * Writes a whole-message frame's head for a `length`-byte payload at the start of `into`, and
 * then `payload` (masked as `masking` says), if given. Returns the bytes written.
 */
export function writeFrame(
  into: Uint8Array,
  opcode: number,
  length: number,
  payload?: Uint8Array,
  masking: Masking = "none",
): number {
  const v = bufferView(into), o = into.byteOffset;
  into[0] = 0x80 | opcode; // FIN: every frame is a whole message
  let at = 2;
  if (length < 126) into[1] = length;
  else if (length < 65536) {
    into[1] = 126;
    v.setUint16(o + 2, length);
    at = 4;
  } else {
    into[1] = 127;
    v.setUint32(o + 2, Math.floor(length / 2 ** 32));
    v.setUint32(o + 6, length >>> 0);
    at = 10;
  }
  let mask: Uint8Array | undefined;
  if (masking !== "none") {
    into[1] |= 0x80;
    mask = into.subarray(at, at += 4);
    if (masking === "zero") mask.fill(0);
    else crypto.getRandomValues(mask);
  }
  if (payload && masking === "random") {
    for (let i = 0; i < length; i++) into[at + i] = payload[i] ^ mask![i & 3];
  } else if (payload) into.set(payload, at);
  return at + (payload ? length : 0);
}
