/**
 * Reproducible sums over the group (`{ reproducible: true }`): each rank turns its terms into
 * accumulators whose f64 sums are exact (kernels/reproducible.ts), the collective's algorithm
 * sums them as it sums any f64 buffer, and every rank that receives the result rounds it once.
 * Exact additions do not depend on their order, so neither do the bits: not on the algorithm,
 * the transport, the ranks' order or how the terms are spread over them.
 *
 * Most calls take two passes: an allreduce of each element's top-cell code (its max: the window
 * every rank rounds its terms to), then the collective on the window sums. A few elements of f32
 * or bf16 take one, on records that carry the window with them; f16 takes one, its window fixed.
 * Device buffers cross to the host for it (the host algorithm the transport runs sums there):
 * WGSL has no f64.
 * @module
 */

import {
  codesOf,
  fromRecords,
  fromWindow,
  planOf,
  recordsOf,
  type ReproducibleDtype,
  reproducibleSum,
  windowOf,
} from "../../kernels/reproducible.ts";
import { ALLREDUCE } from "../collectives/allreduce.ts";
import { COLLECTIVES, hostAlgorithm, type ReducingName } from "../collectives/collective_table.ts";
import type { CollectiveContext, Completion } from "../collectives/context.ts";
import type { Layout } from "../collectives/spec.ts";
import type { CommBuffer } from "../memory/comm_buffer.ts";
import type { GpuBuffer } from "../memory/gpu_memory.ts";
import { DTYPE_INFO, dtypeOf, type TypedArray } from "../types.ts";

/** Scratch slots of the codes, accumulators and device copies (beyond the exact mean's). */
const SLOT = 18;

/** A reproducible call's run on its operands, and what it does on one rank. */
export interface ReproducibleRuns<B> {
  run(ctx: CollectiveContext, a: B, b: B): Completion;
  alone(a: B, b: B): Completion;
}

/**
 * Bytes of the accumulators a reproducible call on `input` sums (`auto` picks the summing pass's
 * algorithm by them); `block` is an allreduce's output, whose length is one term's.
 */
export function accumulatorBytes(
  collective: string,
  input: CommBuffer,
  block: CommBuffer,
): number {
  const count = collective === "allreduce" ? block.length : input.length;
  return 8 * count * planOf(input.dtype as ReproducibleDtype, count).width;
}

/** A run on f64 accumulators. */
type AccumulatorRun = (ctx: CollectiveContext, a: Float64Array, b: Float64Array) => Completion;

/** `layout` with every count and displacement `width` times over (each element is `width` now). */
function widened(layout: Layout, width: number): Layout {
  const wide = (list: readonly number[]) => list.map((v) => v * width);
  return {
    sendCounts: wide(layout.sendCounts),
    sendDispls: wide(layout.sendDispls),
    recvCounts: wide(layout.recvCounts),
    recvDispls: wide(layout.recvDispls),
  };
}

/** `next()` once `pending` settles, or now when there is nothing to wait for. */
function andThen(pending: Completion, next: () => Completion): Completion {
  return pending ? pending.then(next) : next();
}

/**
 * One planned call's reproducible sum on host views: `input` holds this rank's terms (one, or
 * several of `output`'s length one after another for an allreduce), the collective's algorithm
 * (`pick`'s, by the accumulators' bytes) sums the f64 accumulators, and the result is divided by
 * the ranks for avg. What depends on the count is made once per count (a loop of calls repeats
 * it), and a call whose algorithms finish at once finishes at once.
 */
class HostSum {
  readonly #collective: ReducingName;
  readonly #pick: (ctx: CollectiveContext, bytes: number) => unknown;
  readonly #root: number;
  readonly #layout: Layout;
  readonly #avg: boolean;
  #count = -1;
  #plan = planOf("f32", 0);
  #max?: (ctx: CollectiveContext, a: TypedArray, b: TypedArray) => Completion;
  #sum?: AccumulatorRun;

  constructor(
    collective: ReducingName,
    pick: (ctx: CollectiveContext, bytes: number) => unknown,
    root: number,
    layout: Layout,
    avg: boolean,
  ) {
    this.#collective = collective;
    this.#pick = pick;
    this.#root = root;
    this.#layout = layout;
    this.#avg = avg;
  }

  run(ctx: CollectiveContext, input: TypedArray, output: TypedArray): Completion {
    // Elements of one term: the stacked terms of an allreduce are each the output's length.
    const count = this.#collective === "allreduce" ? output.length : input.length;
    if (count !== this.#count) this.#prepare(ctx, dtypeOf(input) as ReproducibleDtype, count);
    const plan = this.#plan;
    let codes: Uint16Array | Float32Array | undefined;
    let pending: Completion = undefined;
    if (this.#max) {
      codes = ctx.scratch(plan.codeDtype, count, SLOT) as Uint16Array | Float32Array;
      codesOf(input, count, codes);
      pending = this.#max(ctx, codes, codes);
    }
    return andThen(pending, () => {
      const acc = ctx.scratch("f64", count * plan.width, SLOT + 1) as Float64Array;
      if (plan.recorded) recordsOf(input, count, acc);
      else windowOf(input, count, codes, acc);
      // The collectives that scatter leave one block of the sums here.
      const blocked = output.length < count && this.#collective !== "allreduce";
      const result = blocked
        ? ctx.scratch("f64", output.length * plan.width, SLOT + 2) as Float64Array
        : acc;
      return andThen(this.#sum!(ctx, acc, result), () => this.#finish(ctx, result, codes, output));
    });
  }

  /** The plan, the codes' max and the accumulators' sum of calls of `count` elements. */
  #prepare(ctx: CollectiveContext, dtype: ReproducibleDtype, count: number): void {
    const plan = planOf(dtype, count),
      bind = COLLECTIVES[this.#collective].bind as (
        run: unknown,
        op: "sum",
        root: number,
        layout: Layout,
      ) => AccumulatorRun;
    this.#count = count;
    this.#plan = plan;
    this.#max = plan.codes > 0
      ? ALLREDUCE.bind(hostAlgorithm(ctx, "allreduce", 2 * count), "max")
      : undefined;
    this.#sum = bind(
      this.#pick(ctx, 8 * count * plan.width),
      "sum",
      this.#root,
      widened(this.#layout, plan.width),
    );
  }

  /** This rank's result from the summed accumulators, on the ranks that receive one. */
  #finish(
    ctx: CollectiveContext,
    result: Float64Array,
    codes: Uint16Array | Float32Array | undefined,
    output: TypedArray,
  ): void {
    const collective = this.#collective;
    // A reduce's other ranks keep their input as it was.
    if (!(COLLECTIVES[collective].staging.writes?.(ctx.rank === this.#root) ?? true)) return;
    const divisor = this.#avg ? ctx.size : 1;
    const sums = result.subarray(0, output.length * this.#plan.width);
    if (this.#plan.recorded) return fromRecords(sums, output, divisor);
    const at = collective === "reduceScatter"
      ? ctx.rank * output.length
      : collective === "reduceScatterv"
      ? this.#layout.recvDispls[ctx.rank]
      : 0;
    fromWindow(sums, codes?.subarray(at, at + output.length), output, divisor);
  }
}

/**
 * The runs of a reproducible `collective` on host views, summed by `run` (the algorithm the call
 * picked, of the collective's host signature).
 */
export function reproducibleOnHost(
  collective: ReducingName,
  run: unknown,
  root: number,
  layout: Layout,
  avg: boolean,
): ReproducibleRuns<TypedArray> {
  const sum = new HostSum(collective, () => run, root, layout, avg);
  return {
    run: (ctx, a, b) => sum.run(ctx, a, b),
    alone: (a, b) => reproducibleSum(a, b),
  };
}

/**
 * The runs of a reproducible `collective` on device buffers: through host copies of them, summed
 * by the host algorithm the transport runs.
 */
export function reproducibleOnDevice(
  collective: ReducingName,
  root: number,
  layout: Layout,
  avg: boolean,
): ReproducibleRuns<GpuBuffer> {
  const pick = (ctx: CollectiveContext, bytes: number) => hostAlgorithm(ctx, collective, bytes);
  const sum = new HostSum(collective, pick, root, layout, avg);
  return {
    async run(ctx, a, b) {
      const input = ctx.scratch(a.dtype, a.length, SLOT + 3);
      await a.read(input);
      const output = ctx.scratch(b.dtype, b.length, SLOT + 4);
      await sum.run(ctx, input, output);
      if (collective !== "reduce" || ctx.rank === root) await b.write(output);
    },
    async alone(a, b) {
      const input = new DTYPE_INFO[a.dtype].array(a.length);
      const output = new DTYPE_INFO[b.dtype].array(b.length);
      await a.read(input);
      reproducibleSum(input, output);
      await b.write(output);
    },
  };
}
