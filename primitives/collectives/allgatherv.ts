/**
 * allgatherv: every rank's `send` (`recvCounts[rank]` elements) into every rank's `recv`, as
 * block r at `recvDispls[r]`; in place `send` is this rank's block of `recv`: MPI_Allgatherv,
 * torch.distributed's `all_gather` of tensors of other sizes.
 * @module
 */

import type { BufferLike } from "../memory/comm_buffer.ts";
import { DTYPE_INFO, type KernelOp, type TypedArray } from "../types.ts";
import { blocksOf, type Counts, total } from "./_counts.ts";
import type { CollectiveContext, Completion } from "./context.ts";
import type { AlgorithmOptions } from "./options.ts";
import {
  type ArgumentChecks,
  type CheckedCall,
  type CollectiveSpec,
  IN_PLACE,
  type Layout,
  type UniformRun,
} from "./spec.ts";

/** Options of {@linkcode Communicator.allgatherv}: each rank's block of `recv`. */
export interface AllgathervOptions extends AlgorithmOptions {
  /** Elements each rank contributes (this rank's is its `send`'s length). */
  recvCounts: Counts;
  /** Where each rank's block starts in `recv`. @default {packed in rank order} */
  recvDispls?: Counts;
}

/** Allgather of blocks of `layout`'s receive counts (see the module). */
export type AllgathervRun<B = TypedArray> = (
  ctx: CollectiveContext,
  send: B,
  recv: B,
  layout: Layout,
) => Completion;

/** allgatherv's spec. */
export const ALLGATHERV = {
  name: "allgatherv",
  code: 11,
  rooted: false,
  reduces: false,
  staging: { pickBy: "recv", pipelines: false },
  /** `send` of `recvCounts[rank]` elements, apart from `recv` or its own block. */
  check(
    args: ArgumentChecks,
    send: BufferLike,
    recv: BufferLike,
    options: AllgathervOptions,
  ): CheckedCall<"allgatherv"> {
    const s = args.buffer(send, "allgatherv"), r = args.buffer(recv, "allgatherv into");
    const what = "allgatherv";
    const into = blocksOf(
      what,
      "recv",
      r.length,
      args.size,
      options.recvCounts,
      options.recvDispls,
      true,
    );
    const mine = into.counts[args.rank];
    args.pair(s, r, s.length === mine, what, `send = recvCounts[${args.rank}] (${mine})`);
    args.apart(s, r, what, args.rank, IN_PLACE.ownSend, into.displs[args.rank]);
    return {
      collective: "allgatherv",
      buffers: [[s, false], [r, true]],
      block: r,
      bytes: total(into.counts) * DTYPE_INFO[r.dtype].bytes,
      stampCount: total(into.counts),
      algorithm: options.algorithm,
      keep: { kind: "allgatherv", buf: send, recv, options },
      layout: { sendCounts: [], sendDispls: [], recvCounts: into.counts, recvDispls: into.displs },
    };
  },
  bind:
    <B>(run: AllgathervRun<B>, _op: KernelOp, _root: number, layout: Layout) =>
    (ctx: CollectiveContext, a: B, b: B) => run(ctx, a, b, layout),
  unbind: <B>(run: UniformRun<B>): AllgathervRun<B> => (ctx, send, recv, layout) =>
    run(ctx, send, recv, "sum", 0, layout),
} as const satisfies CollectiveSpec<"allgatherv">;
