/**
 * bcast: the root's buffer copied into every rank's: MPI_Bcast, ncclBroadcast in place.
 * @module
 */

import type { BufferLike } from "../memory/comm_buffer.ts";
import type { KernelOp, TypedArray } from "../types.ts";
import type { CollectiveContext, Completion } from "./context.ts";
import type { AlgorithmOptions, RootOptions } from "./options.ts";
import {
  type ArgumentChecks,
  type CheckedCall,
  type CollectiveSpec,
  NO_LAYOUT,
  type UniformRun,
} from "./spec.ts";

/** Broadcast of `buf` from `root`. */
export type BcastRun<B = TypedArray> = (
  ctx: CollectiveContext,
  buf: B,
  root: number,
) => Completion;

const onRoot = (isRoot: boolean) => isRoot;
const offRoot = (isRoot: boolean) => !isRoot;

/** bcast's spec. */
export const BCAST = {
  name: "bcast",
  code: 2,
  rooted: true,
  reduces: false,
  staging: { inPlace: true, reads: onRoot, writes: offRoot, pickBy: "send", pipelines: true },
  /** `buf` on `root`, copied into every rank's. */
  check(
    args: ArgumentChecks,
    buf: BufferLike,
    options: RootOptions & AlgorithmOptions,
  ): CheckedCall<"bcast"> {
    const b = args.buffer(buf, "broadcast");
    const root = args.root(options.root ?? 0, "broadcast from");
    const writes = args.rank !== root;
    return {
      collective: "bcast",
      buffers: [[b, writes], [b, writes]],
      block: b,
      root,
      algorithm: options.algorithm,
      keep: { kind: "bcast", buf, options },
    };
  },
  bind: <B>(run: BcastRun<B>, _op: KernelOp, root: number) => (ctx: CollectiveContext, a: B) =>
    run(ctx, a, root),
  unbind: <B>(run: UniformRun<B>): BcastRun<B> => (ctx, buf, root) =>
    run(ctx, buf, buf, "sum", root, NO_LAYOUT),
} as const satisfies CollectiveSpec<"bcast">;
