/**
 * gather: every rank's `send` (n elements) into the root's `recv` (size × n), in rank order;
 * other ranks pass no `recv`; in place the root's `send` is its block of `recv`: MPI_Gather.
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
 * Gather to `root`: every rank's `send` (n) lands as its block of the root's `recv` (size × n).
 * On other ranks `recv` is `send` and is not written.
 */
export type GatherRun<B = TypedArray> = (
  ctx: CollectiveContext,
  send: B,
  recv: B,
  root: number,
) => Completion;

/** gather's spec. */
export const GATHER = {
  name: "gather",
  code: 8,
  rooted: true,
  reduces: false,
  // On the other ranks the placeholder buffer is neither read nor written.
  staging: { writes: (isRoot: boolean) => isRoot, pickBy: "send", pipelines: false },
  check: (
    args: ArgumentChecks,
    send: BufferLike,
    recv: BufferLike | undefined,
    options: RootOptions & AlgorithmOptions,
  ): CheckedCall<"gather"> => rootBlocks(args, "gather", send, recv, options),
  bind:
    <B>(run: GatherRun<B>, _op: KernelOp, root: number) => (ctx: CollectiveContext, a: B, b: B) =>
      run(ctx, a, b, root),
  unbind: <B>(run: UniformRun<B>): GatherRun<B> => (ctx, send, recv, root) =>
    run(ctx, send, recv, "sum", root, NO_LAYOUT),
} as const satisfies CollectiveSpec<"gather">;
