import type { TypedArray } from "../types.ts";
import { copy } from "../../kernels/copy.ts";
import { chunk, type CollectiveContext } from "./context.ts";
import { sharedAccess } from "./_shm_direct.ts";
import type { HostAlgorithm } from "./algorithm.ts";

/** Size from which the root copies part of the data into the receivers. */
const ROOT_HELPS_BYTES = 1024 * 1024;

/**
 * Direct shared-memory broadcast (`shm` only): every rank copies straight from the root's buffer
 * (through its eager slot when small, a heap bounce buffer when the root's buffer is `host`), and
 * the root writes one part of every receiver's buffer meanwhile. One copy per receiver, 2 barriers.
 * The smallest are pipelined: the root leaves its data in a slot and returns at once.
 */
export function bcastShmDirect(
  ctx: CollectiveContext,
  buf: TypedArray,
  root: number,
): void {
  const shared = sharedAccess(ctx, "shm_direct");
  if (buf.byteLength <= shared.pipeBytes) {
    shared.pipeBegin(ctx.stamp);
    if (ctx.rank === root) return shared.pipeWrite(buf);
    copy(buf, shared.pipeRead(root, buf));
    return shared.pipeEnd();
  }
  if (buf.byteLength <= shared.eagerBytes) {
    const slots = shared.eagerExchange(buf, ctx.stamp);
    if (ctx.rank !== root) copy(buf, slots[root]);
    return;
  }
  const { rank, size } = ctx;
  const mine = rank === root ? ctx.staged(buf, 2) : buf;
  const views = shared.exchangeViews(mine, ctx.stamp);
  const source = views[root];
  if (!source) throw new Error("Internal error: the root's buffer is not in its heap");
  // Beyond the caches the root would idle while the others copy, so it copies part `root` into
  // every receiver whose buffer is in its heap and each receiver copies the rest: (n−1)/n of N
  // each. (Below, writing into a buffer another core has cached costs more than it saves.)
  const [s, e] = buf.byteLength >= ROOT_HELPS_BYTES ? chunk(buf.length, size, root) : [0, 0];
  if (rank === root) {
    for (let r = 0; r < size; r++) if (r !== root && views[r]) copy(views[r]!, source, s, s, e - s);
  } else {
    copy(buf, source, 0, 0, s);
    copy(buf, source, e, e);
    if (!views[rank]) copy(buf, source, s, s, e - s);
  }
  shared.barrier(ctx.stamp);
}

/** bcast `shm_direct` (see {@linkcode bcastShmDirect}). */
export const BCAST_SHM_DIRECT: HostAlgorithm<"bcast"> = {
  name: "shm_direct",
  collective: "bcast",
  needs: "shared",
  run: bcastShmDirect,
  // Direct access moves each byte across memory once: ahead of every other at every size.
  winsBelow: () => Infinity,
};
