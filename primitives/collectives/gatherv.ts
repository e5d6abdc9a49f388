/**
 * gatherv: every rank's `send` into the root's `recv`, as block r (`recvCounts[r]` elements from
 * `recvDispls[r]`); other ranks pass no `recv` and no counts; in place the root's `send` is its
 * block of `recv`: MPI_Gatherv.
 * @module
 */

import type { BufferLike } from "../memory/comm_buffer.ts";
import type { KernelOp, TypedArray } from "../types.ts";
import type { Counts } from "./_counts.ts";
import { rootVBlocks } from "./_root_blocks.ts";
import type { CollectiveContext, Completion } from "./context.ts";
import type { AlgorithmOptions, RootOptions } from "./options.ts";
import {
  type ArgumentChecks,
  type CheckedCall,
  type CollectiveSpec,
  type Layout,
  type UniformRun,
} from "./spec.ts";

/** Options of {@linkcode Communicator.gatherv}: the root's blocks of `recv`. */
export interface GathervOptions extends RootOptions, AlgorithmOptions {
  /** On the root: elements each rank sends it (ignored elsewhere). */
  recvCounts?: Counts;
  /** On the root: where each rank's block starts in `recv`. @default {packed in rank order} */
  recvDispls?: Counts;
}

/** Gather of blocks of `layout` to `root` (see the module); on other ranks `recv` is `send`. */
export type GathervRun<B = TypedArray> = (
  ctx: CollectiveContext,
  send: B,
  recv: B,
  root: number,
  layout: Layout,
) => Completion;

/** gatherv's spec. */
export const GATHERV = {
  name: "gatherv",
  code: 12,
  rooted: true,
  reduces: false,
  staging: { writes: (isRoot: boolean) => isRoot, pickBy: "send", pipelines: false },
  check: (
    args: ArgumentChecks,
    send: BufferLike,
    recv: BufferLike | undefined,
    options: GathervOptions,
  ): CheckedCall<"gatherv"> =>
    rootVBlocks(args, "gatherv", send, recv, {
      ...options,
      counts: options.recvCounts,
      displs: options.recvDispls,
    }),
  bind:
    <B>(run: GathervRun<B>, _op: KernelOp, root: number, layout: Layout) =>
    (ctx: CollectiveContext, a: B, b: B) => run(ctx, a, b, root, layout),
  unbind: <B>(run: UniformRun<B>): GathervRun<B> => (ctx, send, recv, root, layout) =>
    run(ctx, send, recv, "sum", root, layout),
} as const satisfies CollectiveSpec<"gatherv">;
