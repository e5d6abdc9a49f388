/**
 * reduce: every rank's buffer reduced into the root's (in place or into `out`); other ranks'
 * buffers stay as they were: MPI_Reduce, ncclReduce.
 * @module
 */

import type { BufferLike } from "../memory/comm_buffer.ts";
import type { KernelOp, TypedArray } from "../types.ts";
import type { CollectiveContext, Completion } from "./context.ts";
import type { ReduceOptions, RootOptions } from "./options.ts";
import {
  type ArgumentChecks,
  type CheckedCall,
  type CollectiveSpec,
  NO_LAYOUT,
  type UniformRun,
} from "./spec.ts";

/**
 * Reduction of every rank's `input` into `output` on `root`. On the root `output` may be `input`
 * (in place); on every other rank it is `input`, which stays unchanged.
 */
export type ReduceRun<B = TypedArray> = (
  ctx: CollectiveContext,
  input: B,
  output: B,
  op: KernelOp,
  root: number,
) => Completion;

/** reduce's spec. */
export const REDUCE = {
  name: "reduce",
  code: 3,
  rooted: true,
  reduces: true,
  staging: { inPlace: true, writes: (isRoot: boolean) => isRoot, pickBy: "send", pipelines: true },
  /** Into `buf` (or `out`) on the root; other ranks' unchanged. */
  check(
    args: ArgumentChecks,
    buf: BufferLike,
    options: ReduceOptions & RootOptions,
  ): CheckedCall<"reduce"> {
    const root = args.root(options.root ?? 0, "reduce to");
    const input = args.buffer(buf, "reduce");
    const isRoot = args.rank === root;
    const target = isRoot ? args.output(input, options.out, "reduce") : input;
    const op = args.op(options.op ?? "sum");
    return {
      collective: "reduce",
      buffers: [[input, false], [target, isRoot]],
      block: input,
      op,
      reproducible: args.reproducible(options.reproducible, op, input, input.length),
      root,
      algorithm: options.algorithm,
      keep: { kind: "reduce", buf, options },
      divides: isRoot,
    };
  },
  bind:
    <B>(run: ReduceRun<B>, op: KernelOp, root: number) => (ctx: CollectiveContext, a: B, b: B) =>
      run(ctx, a, b, op, root),
  unbind: <B>(run: UniformRun<B>): ReduceRun<B> => (ctx, input, output, op, root) =>
    run(ctx, input, output, op, root, NO_LAYOUT),
} as const satisfies CollectiveSpec<"reduce">;
