/**
 * scatterv: block r of the root's `send` (`sendCounts[r]` elements from `sendDispls[r]`) into
 * rank r's `recv`; other ranks pass no `send` and no counts; in place the root's `recv` is its
 * block of `send`: MPI_Scatterv.
 * @module
 */

import type { BufferLike } from "../memory/comm_buffer.ts";
import type { KernelOp, TypedArray } from "../types.ts";
import { blocksOf, type Counts } from "./_counts.ts";
import type { CollectiveContext, Completion } from "./context.ts";
import type { AlgorithmOptions, RootOptions } from "./options.ts";
import {
  type ArgumentChecks,
  type CheckedCall,
  type CollectiveSpec,
  IN_PLACE,
  type Layout,
  NO_LAYOUT,
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
  check(
    args: ArgumentChecks,
    send: BufferLike | undefined,
    recv: BufferLike,
    options: ScattervOptions,
  ): CheckedCall<"scatterv"> {
    const r = args.buffer(recv, "scatterv into");
    const root = args.root(options.root ?? 0, "scatterv from");
    // Only the root knows every count: the stamp carries none, each message its own length.
    const call = { collective: "scatterv", block: r, bytes: 0, stampCount: 0, root } as const;
    const algorithm = options.algorithm;
    if (args.rank !== root) {
      return { ...call, algorithm, buffers: [[r, false], [r, true]], layout: NO_LAYOUT };
    }
    if (send === undefined) throw new TypeError(`Cannot scatterv from root ${root} without send`);
    const s = args.buffer(send, "scatterv");
    const from = blocksOf(
      "scatterv",
      "send",
      s.length,
      args.size,
      options.sendCounts,
      options.sendDispls,
      false,
    );
    const mine = from.counts[root];
    args.pair(s, r, r.length === mine, "scatterv", `recv = sendCounts[${root}] (${mine})`);
    args.apart(r, s, "scatterv", root, IN_PLACE.rootRecv, from.displs[root]);
    return {
      ...call,
      algorithm,
      buffers: [[s, false], [r, true]],
      layout: { ...NO_LAYOUT, sendCounts: from.counts, sendDispls: from.displs },
    };
  },
  bind:
    <B>(run: ScattervRun<B>, _op: KernelOp, root: number, layout: Layout) =>
    (ctx: CollectiveContext, a: B, b: B) => run(ctx, a, b, root, layout),
  unbind: <B>(run: UniformRun<B>): ScattervRun<B> => (ctx, send, recv, root, layout) =>
    run(ctx, send, recv, "sum", root, layout),
} as const satisfies CollectiveSpec<"scatterv">;
