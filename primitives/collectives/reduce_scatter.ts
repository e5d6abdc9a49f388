/**
 * reduceScatter: every rank's `send` (size × n) reduced, block `rank` of the result into `recv`
 * (n); in place `recv` is this rank's block of `send`: MPI_Reduce_scatter_block,
 * ncclReduceScatter. The CLI and CSV spell it `reduce_scatter`.
 * @module
 */

import type { BufferLike } from "../memory/comm_buffer.ts";
import { bytesIn } from "../memory/extent.ts";
import type { KernelOp, TypedArray } from "../types.ts";
import type { CollectiveContext, Completion } from "./context.ts";
import type { ReduceOptions } from "./options.ts";
import {
  type ArgumentChecks,
  type CheckedCall,
  type CollectiveSpec,
  IN_PLACE,
  NO_LAYOUT,
  type UniformRun,
} from "./spec.ts";

/** `recv` (n) gets part `rank` of the reduction of every rank's `send` (size × n). */
export type ReduceScatterRun<B = TypedArray> = (
  ctx: CollectiveContext,
  send: B,
  recv: B,
  op: KernelOp,
) => Completion;

/** reduceScatter's spec. */
export const REDUCE_SCATTER = {
  name: "reduceScatter",
  code: 5,
  rooted: false,
  reduces: true,
  staging: { blocked: "send", pickBy: "send", pipelines: true },
  /** `send` = size × `recv`, `recv` apart or its own block. */
  check(
    args: ArgumentChecks,
    send: BufferLike,
    recv: BufferLike,
    options: Omit<ReduceOptions, "out">,
  ): CheckedCall<"reduceScatter"> {
    const s = args.buffer(send, "reduceScatter"), r = args.buffer(recv, "reduceScatter into");
    args.pair(s, r, s.length === r.length * args.size, "reduceScatter", "send = size × recv");
    args.apart(r, s, "reduceScatter", args.rank, IN_PLACE.ownRecv);
    const op = args.op(options.op ?? "sum");
    return {
      collective: "reduceScatter",
      buffers: [[s, false], [r, true]],
      block: r,
      bytes: bytesIn(s),
      op,
      reproducible: args.reproducible(options.reproducible, op, s, s.length),
      algorithm: options.algorithm,
      keep: { kind: "reduceScatter", buf: send, recv, options },
    };
  },
  bind: <B>(run: ReduceScatterRun<B>, op: KernelOp) => (ctx: CollectiveContext, a: B, b: B) =>
    run(ctx, a, b, op),
  unbind: <B>(run: UniformRun<B>): ReduceScatterRun<B> => (ctx, send, recv, op) =>
    run(ctx, send, recv, op, 0, NO_LAYOUT),
} as const satisfies CollectiveSpec<"reduceScatter">;
