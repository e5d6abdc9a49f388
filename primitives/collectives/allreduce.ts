/**
 * allreduce: every rank's `input` reduced into `output` on every rank, in place or out of place
 * (`{ out }`): MPI_Allreduce, ncclAllReduce.
 * @module
 */

import type { BufferLike, CommBuffer } from "../memory/comm_buffer.ts";
import { bytesIn } from "../memory/extent.ts";
import type { KernelOp, TypedArray } from "../types.ts";
import type { CollectiveContext, Completion } from "./context.ts";
import type { ReduceOptions } from "./options.ts";
import {
  type ArgumentChecks,
  type CheckedCall,
  type CollectiveSpec,
  NO_LAYOUT,
  type UniformRun,
} from "./spec.ts";

/**
 * Allreduce of every rank's `input` into `output` on every rank; `output` may be `input`
 * (in place) and is otherwise a distinct buffer of the same length and dtype.
 */
export type AllreduceRun<B = TypedArray> = (
  ctx: CollectiveContext,
  input: B,
  output: B,
  op: KernelOp,
) => Completion;

/**
 * The `out` of a reproducible allreduce of several terms (`input` holds a whole number of terms of
 * `out`'s length, apart from it); undefined for any other call.
 */
function stackedOutput(
  args: ArgumentChecks,
  input: CommBuffer,
  options: ReduceOptions,
): CommBuffer | undefined {
  if (options.reproducible !== true || options.out === undefined) return undefined;
  const output = args.buffer(options.out, "allreduce into");
  if (output.length === input.length) return undefined;
  args.pair(
    input,
    output,
    output.length > 0 && input.length % output.length === 0,
    "allreduce",
    "out = input length, or a whole number of terms of out's length (reproducible)",
  );
  args.apart(output, input, "allreduce");
  return output;
}

/** allreduce's spec. */
export const ALLREDUCE = {
  name: "allreduce",
  code: 1,
  rooted: false,
  reduces: true,
  staging: { inPlace: true, pickBy: "send", pipelines: true },
  /** `buf` in place, or into `out`. */
  check(args: ArgumentChecks, buf: BufferLike, options: ReduceOptions): CheckedCall<"allreduce"> {
    const input = args.buffer(buf, "allreduce");
    const op = args.op(options.op ?? "sum");
    const output = stackedOutput(args, input, options) ??
      args.output(input, options.out, "allreduce");
    const reproducible = args.reproducible(options.reproducible, op, input, output.length);
    if (output.length !== input.length && !reproducible) {
      throw new RangeError(
        `Cannot allreduce ${input.length} into ${output.length} elements: several terms need a ` +
          "reproducible sum (sum or avg of f32, f64, f16 or bf16)",
      );
    }
    return {
      collective: "allreduce",
      buffers: [[input, false], [output, true]],
      block: output,
      bytes: bytesIn(input),
      op,
      algorithm: options.algorithm,
      reproducible,
      keep: { kind: "allreduce", buf, options },
    };
  },
  bind: <B>(run: AllreduceRun<B>, op: KernelOp) => (ctx: CollectiveContext, a: B, b: B) =>
    run(ctx, a, b, op),
  unbind: <B>(run: UniformRun<B>): AllreduceRun<B> => (ctx, input, output, op) =>
    run(ctx, input, output, op, 0, NO_LAYOUT),
} as const satisfies CollectiveSpec<"allreduce">;
