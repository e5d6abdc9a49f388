/**
 * scatter: block r of the root's `send` (size × n) into rank r's `recv` (n); other ranks pass no
 * `send`; in place the root's `recv` is its block of `send`: MPI_Scatter.
 * @module
 */

import type { BufferLike } from "../memory/comm_buffer.ts";
import type { KernelOp, TypedArray } from "../types.ts";
import type { CollectiveContext, Completion } from "./context.ts";
import type { AlgorithmOptions, RootOptions } from "./options.ts";
import { rootBlocks } from "./_root_blocks.ts";
import {
  type ArgumentChecks,
  type CheckedCall,
  type CollectiveSpec,
  NO_LAYOUT,
  type UniformRun,
} from "./spec.ts";

/**
 * Scatter from `root`: block r of the root's `send` (size × n) lands in rank r's `recv` (n). On
 * other ranks `send` is `recv` and is not read.
 */
export type ScatterRun<B = TypedArray> = (
  ctx: CollectiveContext,
  send: B,
  recv: B,
  root: number,
) => Completion;

/** scatter's spec. */
export const SCATTER = {
  name: "scatter",
  code: 9,
  rooted: true,
  reduces: false,
  // On the other ranks the placeholder buffer is neither read nor written.
  staging: { reads: (isRoot: boolean) => isRoot, pickBy: "recv", pipelines: false },
  // The block is the receive; the whole, the root's send.
  check: (
    args: ArgumentChecks,
    send: BufferLike | undefined,
    recv: BufferLike,
    options: RootOptions & AlgorithmOptions,
  ): CheckedCall<"scatter"> => rootBlocks(args, "scatter", recv, send, options),
  bind:
    <B>(run: ScatterRun<B>, _op: KernelOp, root: number) => (ctx: CollectiveContext, a: B, b: B) =>
      run(ctx, a, b, root),
  unbind: <B>(run: UniformRun<B>): ScatterRun<B> => (ctx, send, recv, root) =>
    run(ctx, send, recv, "sum", root, NO_LAYOUT),
} as const satisfies CollectiveSpec<"scatter">;
