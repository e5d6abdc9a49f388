/**
 * The segments the chain algorithms pass along their line of ranks.
 * @module
 */

import type { TypedArray } from "../types.ts";
import { segmentsOf } from "./context.ts";

/**
 * Bytes per segment: a 32nd of the buffer, from 64 KiB to 1 MiB. With n ranks a chain costs
 * n − 2 segment times beyond the buffer's own, so segments are small next to the buffer; below
 * 64 KiB each would cost more in latency than it saves (docs/auto.md, "Between hosts").
 */
export function chainSegmentBytes(bytes: number): number {
  return Math.min(1 << 20, Math.max(1 << 16, bytes / 32));
}

/** How many segments a chain cuts a `bytes`-byte buffer into. */
export function chainSegmentCount(bytes: number): number {
  return Math.max(1, Math.ceil(bytes / chainSegmentBytes(bytes)));
}

/** `view` in the chain's segments. */
export function chainSegments(view: TypedArray): TypedArray[] {
  return segmentsOf(view, chainSegmentBytes(view.byteLength));
}
