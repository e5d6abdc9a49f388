/**
 * scatterv: block r of the root's `send` (`sendCounts[r]` elements from `sendDispls[r]`) into
 * rank r's `recv`; other ranks pass no `send` and no counts; in place the root's `recv` is its
 * block of `send`: MPI_Scatterv.
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

/** Options of {@linkcode Communicator.scatterv}: the root's blocks of `send`. */
export interface ScattervOptions extends RootOptions, AlgorithmOptions {
  /** On the root: elements each rank receives (ignored elsewhere). */
  sendCounts?: Counts;
  /** On the root: where each rank's block starts in `send`. @default {packed in rank order} */
  sendDispls?: Counts;
}

/** Scatter of blocks of `layout` from `root` (see the module); on other ranks `send` is `recv`. */
export type ScattervRun<B = TypedArray> = (
  ctx: CollectiveContext,
  send: B,
  recv: B,
  root: number,
  layout: Layout,
) => Completion;

/** scatterv's spec. */
export const SCATTERV = {
  name: "scatterv",
  code: 13,
  rooted: true,
  reduces: false,
  staging: { reads: (isRoot: boolean) => isRoot, pickBy: "recv", pipelines: false },
  check: (
    args: ArgumentChecks,
    send: BufferLike | undefined,
    recv: BufferLike,
    options: ScattervOptions,
  ): CheckedCall<"scatterv"> =>
    rootVBlocks(args, "scatterv", recv, send, {
      ...options,
      counts: options.sendCounts,
      displs: options.sendDispls,
    }),
  bind:
    <B>(run: ScattervRun<B>, _op: KernelOp, root: number, layout: Layout) =>
    (ctx: CollectiveContext, a: B, b: B) => run(ctx, a, b, root, layout),
  unbind: <B>(run: UniformRun<B>): ScattervRun<B> => (ctx, send, recv, root, layout) =>
    run(ctx, send, recv, "sum", root, layout),
} as const satisfies CollectiveSpec<"scatterv">;
