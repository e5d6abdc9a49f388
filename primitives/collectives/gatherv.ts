/**
 * gatherv: every rank's `send` into the root's `recv`, as block r (`recvCounts[r]` elements from
 * `recvDispls[r]`); other ranks pass no `recv` and no counts; in place the root's `send` is its
 * block of `recv`: MPI_Gatherv.
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
  check(
    args: ArgumentChecks,
    send: BufferLike,
    recv: BufferLike | undefined,
    options: GathervOptions,
  ): CheckedCall<"gatherv"> {
    const s = args.buffer(send, "gatherv");
    const root = args.root(options.root ?? 0, "gatherv to");
    // Only the root knows every count: the stamp carries none, each message its own length.
    const call = { collective: "gatherv", block: s, bytes: 0, stampCount: 0, root } as const;
    const algorithm = options.algorithm;
    if (args.rank !== root) {
      return { ...call, algorithm, buffers: [[s, false], [s, false]], layout: NO_LAYOUT };
    }
    if (recv === undefined) throw new TypeError(`Cannot gatherv to root ${root} without recv`);
    const r = args.buffer(recv, "gatherv into");
    const into = blocksOf(
      "gatherv",
      "recv",
      r.length,
      args.size,
      options.recvCounts,
      options.recvDispls,
      true,
    );
    const mine = into.counts[root];
    args.pair(s, r, s.length === mine, "gatherv", `send = recvCounts[${root}] (${mine})`);
    args.apart(s, r, "gatherv", root, IN_PLACE.rootSend, into.displs[root]);
    return {
      ...call,
      algorithm,
      buffers: [[s, false], [r, true]],
      layout: { ...NO_LAYOUT, recvCounts: into.counts, recvDispls: into.displs },
    };
  },
  bind:
    <B>(run: GathervRun<B>, _op: KernelOp, root: number, layout: Layout) =>
    (ctx: CollectiveContext, a: B, b: B) => run(ctx, a, b, root, layout),
  unbind: <B>(run: UniformRun<B>): GathervRun<B> => (ctx, send, recv, root, layout) =>
    run(ctx, send, recv, "sum", root, layout),
} as const satisfies CollectiveSpec<"gatherv">;
