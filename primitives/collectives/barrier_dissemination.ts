/**
 * The barrier of the message transports: dissemination (Hensgen et al.), ⌈log2 n⌉ rounds.
 * @module
 */

import type { CollectiveContext } from "./context.ts";
import { mod } from "./context.ts";

const EMPTY = new Int32Array(0);

/** Dissemination barrier: ⌈log2 n⌉ rounds; in round k rank r signals r + 2^k and waits for r − 2^k. */
export async function barrierDissemination(ctx: CollectiveContext): Promise<void> {
  const { rank, size } = ctx;
  for (let k = 1; k < size; k <<= 1) {
    await ctx.sendrecv(mod(rank + k, size), EMPTY, mod(rank - k, size), EMPTY);
  }
}
