/**
 * What the byte-stream transports (`tcp`, `ws`) agree on whatever their wire: the frames a
 * connection carries ({@linkcode Frame}), a wire's format ({@linkcode Wire}), and the connections
 * a mesh hands over.
 * @module
 */

import type { Goodbye } from "../../primitives/transports/closing_check.ts";

/**
 * Largest payload of one data frame: a larger message goes as several, so the two ways of an
 * exchange interleave; a ring's 1 MiB segments stay single frames (docs/transports/stream.md,
 * "Fragments"). A reader refuses a longer frame at its head rather than wait for its bytes.
 */
export const FRAGMENT_BYTES = 1024 * 1024;

/** What a frame says, whatever the wire. */
export type Frame =
  /**
   * A message of `total` bytes, or one fragment of it: `length` of its bytes follow the head. A
   * message's fragments are consecutive on a connection; the first starts it.
   */
  | { kind: "data"; tag: number; length: number; total: number; stamp: number }
  /** A stalled receive's call stamp (see `CallCheck.stampOf`). */
  | { kind: "probe"; tag: number; stamp: number }
  /** "The group failed because rank `rank` did", and why. */
  | { kind: "abort"; rank: number; reason: string }
  /** This rank closes its part of the group (closing_check.ts); no message follows. */
  | ({ kind: "closing" } & Goodbye)
  /** "This rank finished and sends nothing more." */
  | { kind: "bye" }
  /** The peer ended its side without a goodbye, saying why (a WebSocket close code, say). */
  | { kind: "closed"; reason: string }
  /** A keep-alive to answer with a `pong` carrying the same bytes (WebSocket). */
  | { kind: "ping" | "pong"; payload: Uint8Array };

/** A frame format: how frames are laid out on a connection. */
export interface Wire {
  /** Most bytes {@linkcode Wire.write} puts before a payload. */
  readonly maxHeadBytes: number;
  /**
   * Writes `frame` at the start of `into`: all of it but a data frame's payload, which the caller
   * writes next. Returns the bytes written.
   */
  write(into: Uint8Array, frame: Frame): number;
  /**
   * The frame at `at` (0 unless given) of `bytes`, whose bytes run to `end` (their end unless
   * given), from a `size`-rank group, with the bytes its head took (all of a frame but a data
   * frame's payload); undefined while the head is incomplete; why not, if it cannot be one.
   */
  read(
    bytes: Uint8Array,
    size: number,
    at?: number,
    end?: number,
  ): { frame: Frame; bytes: number } | string | undefined;
}

const dataViews = new WeakMap<ArrayBufferLike, DataView>();

/**
 * A DataView of the whole buffer behind `bytes`, made once per buffer: `bytes[i]` is at
 * `bytes.byteOffset + i`. Frames are read and written in each link's two fixed buffers, where a
 * DataView per frame would cost more than parsing the frame.
 */
export function bufferView(bytes: Uint8Array): DataView {
  let view = dataViews.get(bytes.buffer);
  if (!view) dataViews.set(bytes.buffer, view = new DataView(bytes.buffer));
  return view;
}

/** A connection of a finished mesh, with what its reader took past the rendezvous. */
export interface MeshConnection {
  peer: number;
  conn: Deno.TcpConn;
  /** This rank dialed it. */
  dialed: boolean;
  head: Uint8Array;
}

/** How a transport uses one connection of its mesh: its frame format, and which way it carries. */
export interface Route {
  wire: Wire;
  /** It carries this rank's messages to the peer. */
  sends: boolean;
  /** It carries the peer's messages to this rank. */
  receives: boolean;
}

/** One connection of a stream transport: as the mesh handed it over, and its route. */
export type Connection = MeshConnection & Route;
