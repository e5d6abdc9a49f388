/**
 * reduceScatterv: every rank's `send` (the sum of `recvCounts` elements) reduced, block `rank`
 * of the result (`recvCounts[rank]` elements, blocks packed in rank order) into `recv`; in place
 * `recv` is this rank's block of `send`: MPI_Reduce_scatter (with counts). The CLI and CSV spell
 * it `reduce_scatterv`.
 * @module
 */

import type { BufferLike } from "../memory/comm_buffer.ts";
import type { KernelOp, TypedArray } from "../types.ts";
import { blocksOf, type Counts, total } from "./_counts.ts";
import type { CollectiveContext, Completion } from "./context.ts";
import type { ReduceOptions } from "./options.ts";
import {
  type ArgumentChecks,
  type CheckedCall,
  type CollectiveSpec,
  IN_PLACE,
  type Layout,
  NO_LAYOUT,
  type UniformRun,
} from "./spec.ts";

/** Options of {@linkcode Communicator.reduceScatterv}: each rank's share of the result. */
export interface ReduceScattervOptions extends Omit<ReduceOptions, "out"> {
  /** Elements of the result each rank receives, in rank order (this rank's: `recv`'s length). */
  recvCounts: Counts;
}

/** Reduce-scatter into blocks of `layout`'s receive counts (see the module). */
export type ReduceScattervRun<B = TypedArray> = (
  ctx: CollectiveContext,
  send: B,
  recv: B,
  op: KernelOp,
  layout: Layout,
) => Completion;

/** reduceScatterv's spec. */
export const REDUCE_SCATTERV = {
  name: "reduceScatterv",
  code: 14,
  rooted: false,
  reduces: true,
  staging: { pickBy: "send", pipelines: false },
  check(
    args: ArgumentChecks,
    send: BufferLike,
    recv: BufferLike,
    options: ReduceScattervOptions,
  ): CheckedCall<"reduceScatterv"> {
    const s = args.buffer(send, "reduceScatterv"), r = args.buffer(recv, "reduceScatterv into");
    const what = "reduceScatterv";
    // The blocks are packed: the sum of the counts is the length `send` must have.
    const into = blocksOf(what, "recv", Infinity, args.size, options.recvCounts, undefined, true);
    const all = total(into.counts), mine = into.counts[args.rank];
    args.pair(
      s,
      r,
      s.length === all && r.length === mine,
      what,
      `send = the sum of recvCounts (${all}), recv = recvCounts[${args.rank}] (${mine})`,
    );
    args.apart(r, s, what, args.rank, IN_PLACE.ownRecv, into.displs[args.rank]);
    const op = args.op(options.op ?? "sum");
    return {
      collective: "reduceScatterv",
      buffers: [[s, false], [r, true]],
      block: s,
      stampCount: all,
      op,
      reproducible: args.reproducible(options.reproducible, op, s, s.length),
      algorithm: options.algorithm,
      keep: { kind: "reduceScatterv", buf: send, recv, options },
      layout: { ...NO_LAYOUT, recvCounts: into.counts, recvDispls: into.displs },
    };
  },
  bind:
    <B>(run: ReduceScattervRun<B>, op: KernelOp, _root: number, layout: Layout) =>
    (ctx: CollectiveContext, a: B, b: B) => run(ctx, a, b, op, layout),
  unbind: <B>(run: UniformRun<B>): ReduceScattervRun<B> => (ctx, send, recv, op, layout) =>
    run(ctx, send, recv, op, 0, layout),
} as const satisfies CollectiveSpec<"reduceScatterv">;
