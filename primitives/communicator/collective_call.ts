/**
 * A collective call once its arguments are checked: the one form every collective of the
 * Communicator takes, and how it becomes a call the runner runs — stamped, on host views or device
 * buffers as the picked algorithm works, with what it does on one rank and after the algorithm.
 * @module
 */

import { type AlgorithmOf, onHost } from "../collectives/algorithm.ts";
import {
  type CollectiveName,
  COLLECTIVES,
  type ReducingName,
  type Signatures,
} from "../collectives/collective_table.ts";
import { type CheckedCall, NO_LAYOUT } from "../collectives/spec.ts";
import type { GpuBuffer } from "../memory/gpu_memory.ts";
import type { Indexed } from "../registry.ts";
import type { KernelOp, ReduceOp, TypedArray } from "../types.ts";
import type { PlannedCall } from "./collective_runner.ts";
import { type Averaging, exactMeanOnDevice, exactMeanOnHost } from "./exact_mean.ts";
import { DEVICE, HOST, type OperandSide } from "./operands.ts";
import { reproducibleOnDevice, reproducibleOnHost } from "./reproducible.ts";
import { callStamp } from "./stamp.ts";

export type { CheckedCall };

/** The call the runner runs for `call` with its algorithm `picked`, on `size` ranks. */
export function planCall<C extends CollectiveName>(
  picked: Indexed<AlgorithmOf<C>>,
  call: CheckedCall<C>,
  size: number,
): { onHost: true; call: PlannedCall<TypedArray> } | {
  onHost: false;
  call: PlannedCall<GpuBuffer>;
} {
  const { collective, op = "sum", root = 0, layout = NO_LAYOUT } = call;
  const count = call.stampCount ?? call.block.length;
  const reproducible = call.reproducible ?? false;
  const stamp = callStamp(
    collective,
    call.block.dtype,
    count,
    op,
    root,
    picked.index,
    reproducible,
  );
  const spec = COLLECTIVES[collective], kop = kernelOp(op);
  const divides = op === "avg" && (call.divides ?? true);
  const made = <B>(side: OperandSide<B>, run: Signatures<B>[C]): PlannedCall<B> => ({
    stamp,
    side,
    run: spec.bind(run, kop, root, layout),
    // A bcast on one rank has nothing to do: its buffer is its result.
    alone: collective === "bcast" ? undefined : side.copy,
    after: divides ? (_, out) => side.divide(out, size) : undefined,
  });
  // A reproducible sum travels as exact f64 accumulators (reproducible.ts).
  if (reproducible) {
    const c = collective as ReducingName, avg = op === "avg";
    return onHost(picked)
      ? {
        onHost: true,
        call: { stamp, side: HOST, ...reproducibleOnHost(c, picked.run, root, layout, avg) },
      }
      : {
        onHost: false,
        call: { stamp, side: DEVICE, ...reproducibleOnDevice(c, root, layout, avg) },
      };
  }
  // An i32 average is the truncated true mean, never the mean of a wrapped sum (exact_mean.ts).
  const averaging = op === "avg" && call.block.dtype === "i32" && size > 1;
  if (averaging) {
    const c = collective as Averaging;
    return onHost(picked)
      ? { onHost: true, call: { stamp, side: HOST, run: exactMeanOnHost(c, root, layout) } }
      : { onHost: false, call: { stamp, side: DEVICE, run: exactMeanOnDevice(c, root, layout) } };
  }
  return onHost(picked)
    ? { onHost: true, call: made(HOST, picked.run) }
    : { onHost: false, call: made(DEVICE, picked.run) };
}

/** The kernel that reduces for `op` (avg sums, then divides). */
export function kernelOp(op: ReduceOp): KernelOp {
  return op === "avg" ? "sum" : op;
}
