/**
 * A collective call once its arguments are checked: the one form every collective of the
 * Communicator takes, and how it becomes a call the runner runs — stamped, on host views or device
 * buffers as the picked algorithm works, with what it does on one rank and after the algorithm.
 * @module
 */

import { type AlgorithmOf, onHost } from "../collectives/algorithm.ts";
import type { CollectiveContext, Completion, Signatures } from "../collectives/context.ts";
import type { CommBuffer } from "../memory/comm_buffer.ts";
import type { GpuBuffer } from "../memory/gpu_memory.ts";
import type { Indexed } from "../registry.ts";
import type { CollectiveName, KernelOp, ReduceOp, TypedArray } from "../types.ts";
import type { Keep, PlannedCall } from "./collective_runner.ts";
import { DEVICE, HOST, type OperandSide } from "./operands.ts";
import { type Averaging, exactMeanOnDevice, exactMeanOnHost } from "./exact_mean.ts";
import { callStamp } from "./stamp.ts";

/** A collective call whose arguments are checked. */
export interface CheckedCall<C extends CollectiveName> {
  collective: C;
  /** Input and output, each with whether the call writes it (a bcast's buffer twice). */
  buffers: [[CommBuffer, boolean], [CommBuffer, boolean]];
  /** The buffer whose dtype and length the stamp carries: equal on every rank. */
  block: CommBuffer;
  /** Bytes `auto` picks by. @default {the block's} */
  bytes?: number;
  op?: ReduceOp;
  root?: number;
  algorithm?: string;
  /** A call on host buffers to keep (a loop of small collectives). */
  keep?: Keep;
  /** With `avg`, whether this rank divides its output (a reduce's root only). @default {true} */
  divides?: boolean;
}

/** Collective `C`'s algorithm `run` as a call on operands `a` and `b`, with the call's op and root. */
type Bind<C extends CollectiveName> = <B>(
  run: Signatures<B>[C],
  op: KernelOp,
  root: number,
) => (ctx: CollectiveContext, a: B, b: B) => Completion;

/** How each collective's algorithms take a call's operands, op and root. */
const BIND: { [C in CollectiveName]: Bind<C> } = {
  allreduce: (run, op) => (ctx, a, b) => run(ctx, a, b, op),
  bcast: (run, _op, root) => (ctx, a) => run(ctx, a, root),
  reduce: (run, op, root) => (ctx, a, b) => run(ctx, a, b, op, root),
  allgather: (run) => (ctx, a, b) => run(ctx, a, b),
  reduceScatter: (run, op) => (ctx, a, b) => run(ctx, a, b, op),
  alltoall: (run) => (ctx, a, b) => run(ctx, a, b),
  gather: (run, _op, root) => (ctx, a, b) => run(ctx, a, b, root),
  scatter: (run, _op, root) => (ctx, a, b) => run(ctx, a, b, root),
};

/** The call the runner runs for `call` with its algorithm `picked`, on `size` ranks. */
export function planCall<C extends CollectiveName>(
  picked: Indexed<AlgorithmOf<C>>,
  call: CheckedCall<C>,
  size: number,
): { onHost: true; call: PlannedCall<TypedArray> } | {
  onHost: false;
  call: PlannedCall<GpuBuffer>;
} {
  const { collective, op = "sum", root = 0 } = call;
  const stamp = callStamp(collective, call.block.dtype, call.block.length, op, root, picked.index);
  const bind: Bind<C> = BIND[collective], kop = kernelOp(op);
  const divides = op === "avg" && (call.divides ?? true);
  const made = <B>(side: OperandSide<B>, run: Signatures<B>[C]): PlannedCall<B> => ({
    stamp,
    side,
    run: bind(run, kop, root),
    // A bcast on one rank has nothing to do: its buffer is its result.
    alone: collective === "bcast" ? undefined : side.copy,
    after: divides ? (_, out) => side.divide(out, size) : undefined,
  });
  // An i32 average is the truncated true mean, never the mean of a wrapped sum (exact_mean.ts).
  const averaging = op === "avg" && call.block.dtype === "i32" && size > 1;
  if (averaging) {
    const c = collective as Averaging;
    return onHost(picked)
      ? { onHost: true, call: { stamp, side: HOST, run: exactMeanOnHost(c, root) } }
      : { onHost: false, call: { stamp, side: DEVICE, run: exactMeanOnDevice(c, root) } };
  }
  return onHost(picked)
    ? { onHost: true, call: made(HOST, picked.run) }
    : { onHost: false, call: made(DEVICE, picked.run) };
}

/** The kernel that reduces for `op` (avg sums, then divides). */
export function kernelOp(op: ReduceOp): KernelOp {
  return op === "avg" ? "sum" : op;
}
