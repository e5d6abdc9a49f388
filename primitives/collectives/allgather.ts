/**
 * allgather: every rank's `send` (n elements) into `recv` (size × n) on every rank, in rank
 * order; in place `send` is this rank's block of `recv`: MPI_Allgather, ncclAllGather.
 * @module
 */

import type { BufferLike } from "../memory/comm_buffer.ts";
import { bytesIn } from "../memory/extent.ts";
import type { KernelOp, TypedArray } from "../types.ts";
import type { CollectiveContext, Completion } from "./context.ts";
import type { AlgorithmOptions } from "./options.ts";
import {
  type ArgumentChecks,
  type CheckedCall,
  type CollectiveSpec,
  IN_PLACE,
  NO_LAYOUT,
  type UniformRun,
} from "./spec.ts";

/** `recv` (size × n) gets every rank's `send` (n), in rank order. */
export type AllgatherRun<B = TypedArray> = (
  ctx: CollectiveContext,
  send: B,
  recv: B,
) => Completion;

/** allgather's spec. */
export const ALLGATHER = {
  name: "allgather",
  code: 4,
  rooted: false,
  reduces: false,
  staging: { blocked: "recv", pickBy: "recv", pipelines: true },
  /** `recv` = size × `send`, `send` apart or its own block. */
  check(
    args: ArgumentChecks,
    send: BufferLike,
    recv: BufferLike,
    options: AlgorithmOptions,
  ): CheckedCall<"allgather"> {
    const s = args.buffer(send, "allgather"), r = args.buffer(recv, "allgather into");
    args.pair(s, r, r.length === s.length * args.size, "allgather", "recv = size × send");
    args.apart(s, r, "allgather", args.rank, IN_PLACE.ownSend);
    return {
      collective: "allgather",
      buffers: [[s, false], [r, true]],
      block: s,
      bytes: bytesIn(r),
      algorithm: options.algorithm,
      keep: { kind: "allgather", buf: send, recv, options },
    };
  },
  bind: <B>(run: AllgatherRun<B>, _op: KernelOp) => (ctx: CollectiveContext, a: B, b: B) =>
    run(ctx, a, b),
  unbind: <B>(run: UniformRun<B>): AllgatherRun<B> => (ctx, send, recv) =>
    run(ctx, send, recv, "sum", 0, NO_LAYOUT),
} as const satisfies CollectiveSpec<"allgather">;
