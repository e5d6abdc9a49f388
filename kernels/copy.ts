/**
 * Copying between typed arrays of one element type, fast for the few elements small collectives
 * and small messages move.
 * @module
 */

import type { TypedArray } from "./elements.ts";
import { copyWasm } from "./reduce.ts";

/**
 * Below this many elements an element loop beats `TypedArray.prototype.set` (1 float: ~5 ns
 * against ~30 ns here; they meet near 32).
 */
const SHORT_LENGTH = 16;

/**
 * From this many bytes between two WebAssembly memories (heaps), `memory.copy`, not `set`, whose
 * copy of shared memory runs at about a third of the rate (docs/measuring.md, "Copies between
 * heaps"); below it, looking up the two memories costs about what the copy saves.
 */
const WASM_BYTES = 512;

/**
 * Copies `n` elements of `src` from `srcAt` (all of it by default) into `dst` at `dstAt` (its
 * start by default); both hold one element type (a dtype's, or bytes). Ranges in one buffer may
 * overlap.
 */
export function copy<T extends TypedArray | Uint8Array>(
  dst: T,
  src: T,
  dstAt = 0,
  srcAt = 0,
  n = src.length - srcAt,
): void {
  if (n > SHORT_LENGTH) {
    const k = src.BYTES_PER_ELEMENT, bytes = n * k;
    // Only ranges inside both views: `memory.copy` would read and write past them, where `set`
    // clamps or throws.
    const inside = srcAt >= 0 && dstAt >= 0 && srcAt + n <= src.length && dstAt + n <= dst.length;
    if (
      bytes >= WASM_BYTES && inside &&
      copyWasm(dst, dst.byteOffset + dstAt * k, src, src.byteOffset + srcAt * k, bytes)
    ) return;
    return dst.set(srcAt === 0 && n === src.length ? src : src.subarray(srcAt, srcAt + n), dstAt);
  }
  for (let i = 0; i < n; i++) dst[dstAt + i] = src[srcAt + i];
}
