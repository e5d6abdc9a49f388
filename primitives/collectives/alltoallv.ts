/**
 * alltoallv: block j of every rank's `send` (`sendCounts[j]` elements from `sendDispls[j]`) to
 * rank j, where it lands as block i (the sender's rank) of `recv` (`recvCounts[i]` from
 * `recvDispls[i]`); in place `send` is `recv` itself, by `recv`'s counts: MPI_Alltoallv,
 * torch.distributed's `all_to_all_single` with split sizes. The CLI spells it `alltoallv`.
 * @module
 */

import type { BufferLike } from "../memory/comm_buffer.ts";
import { sameBytes } from "../memory/extent.ts";
import type { KernelOp, TypedArray } from "../types.ts";
import { blocksOf, type Counts } from "./_counts.ts";
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

/** Options of {@linkcode Communicator.alltoallv}: the blocks of each operand, per rank. */
export interface AlltoallvOptions extends AlgorithmOptions {
  /** Elements this rank sends to each rank (in place: `recvCounts`). */
  sendCounts?: Counts;
  /** Where each rank's block starts in `send`. @default {packed in rank order} */
  sendDispls?: Counts;
  /** Elements this rank receives from each rank: what that rank sends it. */
  recvCounts: Counts;
  /** Where each rank's block starts in `recv`. @default {packed in rank order} */
  recvDispls?: Counts;
}

/** All-to-all with per-rank blocks of `layout` (see the module). */
export type AlltoallvRun<B = TypedArray> = (
  ctx: CollectiveContext,
  send: B,
  recv: B,
  layout: Layout,
) => Completion;

/** alltoallv's spec. */
export const ALLTOALLV = {
  name: "alltoallv",
  code: 10,
  rooted: false,
  reduces: false,
  staging: { pickBy: "send", pipelines: false },
  /** `send` and `recv` apart, or one buffer (in place); every block inside its operand. */
  check(
    args: ArgumentChecks,
    send: BufferLike,
    recv: BufferLike,
    options: AlltoallvOptions,
  ): CheckedCall<"alltoallv"> {
    const s = args.buffer(send, "alltoallv"), r = args.buffer(recv, "alltoallv into");
    args.pair(s, r, true, "alltoallv", "any lengths");
    const inPlace = sameBytes(s, r);
    if (!inPlace) args.apart(s, r, "alltoallv", 0, IN_PLACE.out);
    const what = "alltoallv";
    const into = blocksOf(
      what,
      "recv",
      r.length,
      args.size,
      options.recvCounts,
      options.recvDispls,
      true,
    );
    const from = inPlace
      ? into
      : blocksOf(what, "send", s.length, args.size, options.sendCounts, options.sendDispls, false);
    return {
      collective: "alltoallv",
      buffers: [[s, false], [r, true]],
      block: s,
      // No rank knows the whole matrix: auto picks alike on every rank, by the rank count alone.
      bytes: 0,
      stampCount: 0,
      algorithm: options.algorithm,
      keep: { kind: "alltoallv", buf: send, recv, options },
      layout: {
        sendCounts: from.counts,
        sendDispls: from.displs,
        recvCounts: into.counts,
        recvDispls: into.displs,
      },
    };
  },
  bind:
    <B>(run: AlltoallvRun<B>, _op: KernelOp, _root: number, layout: Layout) =>
    (ctx: CollectiveContext, a: B, b: B) => run(ctx, a, b, layout),
  unbind: <B>(run: UniformRun<B>): AlltoallvRun<B> => (ctx, send, recv, layout) =>
    run(ctx, send, recv, "sum", 0, layout),
} as const satisfies CollectiveSpec<"alltoallv">;
