/**
 * Helpers of the device algorithms (`gpu_direct`, `gpu_ring`): the transport's device access, and
 * windows of device views cut at aligned element boundaries (device bindings start at aligned
 * offsets; cutting there keeps the kernels' bind groups few and reusable).
 * @module
 */

import type { DeviceView } from "../../kernels/gpu_kernels.ts";
import type { DeviceAccess } from "../transports/transport.ts";
import { DTYPE_INFO } from "../types.ts";
import type { CollectiveContext } from "./context.ts";

/** Chunk boundaries fall on multiples of this many elements (256 bytes of f32). */
const CHUNK_ALIGN = 64;

/** The transport's device access; throws when the transport has none. */
export function deviceAccess(ctx: CollectiveContext, algorithm: string): DeviceAccess {
  const device = ctx.transport.device;
  if (!device) {
    throw new TypeError(
      `Algorithm ${algorithm} needs ranks that share a device; transport ${ctx.transport.name} ` +
        `has none (use it with transport gpu)`,
    );
  }
  return device;
}

/** Elements `[start, end)` of `view`. */
export function sub(view: DeviceView, start: number, end: number): DeviceView {
  const bytes = DTYPE_INFO[view.dtype].bytes;
  return { ...view, byteOffset: view.byteOffset + start * bytes, length: end - start };
}

/** Block `r` of `view`: `counts[r]` elements from `displs[r]` (the v collectives' blocks). */
export function blockView(
  view: DeviceView,
  counts: readonly number[],
  displs: readonly number[],
  r: number,
): DeviceView {
  return sub(view, displs[r], displs[r] + counts[r]);
}

/** Part `i` of `view` cut into `parts` near-equal, aligned parts (the last takes the rest). */
export function alignedPart(view: DeviceView, parts: number, i: number): DeviceView {
  const per = Math.ceil(view.length / parts / CHUNK_ALIGN) * CHUNK_ALIGN;
  const start = Math.min(view.length, i * per);
  return sub(view, start, i === parts - 1 ? view.length : Math.min(view.length, start + per));
}

/** `(a mod n)` in `[0, n)`. */
export function wrap(a: number, n: number): number {
  return ((a % n) + n) % n;
}
