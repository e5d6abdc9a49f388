/**
 * alltoall: block j of every rank's `send` (size × n) to rank j, where it lands as block i (the
 * sender's rank) of `recv`; the buffers never overlap: MPI_Alltoall, torch.distributed's
 * `all_to_all_single`.
 * @module
 */

import type { BufferLike } from "../memory/comm_buffer.ts";
import type { KernelOp, TypedArray } from "../types.ts";
import type { CollectiveContext, Completion } from "./context.ts";
import type { AlgorithmOptions } from "./options.ts";
import {
  type ArgumentChecks,
  type CheckedCall,
  type CollectiveSpec,
  NO_LAYOUT,
  type UniformRun,
} from "./spec.ts";

/**
 * All-to-all: block j of every rank's `send` (size × n) goes to rank j, where it lands as block
 * i (the sender's rank) of `recv` (size × n).
 */
export type AlltoallRun<B = TypedArray> = (
  ctx: CollectiveContext,
  send: B,
  recv: B,
) => Completion;

/** alltoall's spec. */
export const ALLTOALL = {
  name: "alltoall",
  code: 7,
  rooted: false,
  reduces: false,
  staging: { pickBy: "send", pipelines: false },
  /** `send` and `recv` of size × n, apart. */
  check(
    args: ArgumentChecks,
    send: BufferLike,
    recv: BufferLike,
    options: AlgorithmOptions,
  ): CheckedCall<"alltoall"> {
    const s = args.buffer(send, "alltoall"), r = args.buffer(recv, "alltoall into");
    const ok = s.length === r.length && s.length % args.size === 0;
    args.pair(s, r, ok, "alltoall", "send = recv = size × n");
    args.apart(s, r, "alltoall");
    return {
      collective: "alltoall",
      buffers: [[s, false], [r, true]],
      block: s,
      algorithm: options.algorithm,
      keep: { kind: "alltoall", buf: send, recv, options },
    };
  },
  bind: <B>(run: AlltoallRun<B>, _op: KernelOp) => (ctx: CollectiveContext, a: B, b: B) =>
    run(ctx, a, b),
  unbind: <B>(run: UniformRun<B>): AlltoallRun<B> => (ctx, send, recv) =>
    run(ctx, send, recv, "sum", 0, NO_LAYOUT),
} as const satisfies CollectiveSpec<"alltoall">;
