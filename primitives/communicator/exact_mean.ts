/**
 * `avg` of `i32` as the true mean, truncated toward zero (C's and WGSL's integer division), not
 * the mean of a sum that wrapped: [1073741818, 2^30, 2^30] averages to 1073741822. Each rank
 * splits its terms x into q = ⌊x / n⌋ and r = x − n·q (0 ≤ r < n) for n ranks; the collective sums
 * both, interleaved (element i's q and r side by side, so a reduce-scatter's blocks stay blocks).
 * Neither sum can wrap: |Σq| ≤ 2^31 − 1 and Σr < n². The sum S = n·Σq + Σr, so ⌊S / n⌋ =
 * Σq + ⌊Σr / n⌋, and the truncated mean is one more where S is negative and not a multiple of n.
 * Device buffers cross to the host for it (the host algorithm the transport runs sums there): an
 * i32 average is rare, and WGSL has no 64-bit integers.
 * @module
 */

import type { Layout } from "../collectives/spec.ts";
import { COLLECTIVES, hostAlgorithm, type ReducingName } from "../collectives/collective_table.ts";
import type { CollectiveContext } from "../collectives/context.ts";
import type { GpuBuffer } from "../memory/gpu_memory.ts";
import type { TypedArray } from "../types.ts";

/** The collectives that average. */
export type Averaging = ReducingName;

/** Scratch slots of the split terms (beyond the algorithms' and staging's). */
const SLOT = 14;

/** `wide[2i], wide[2i+1]` ← q and r of `x[i]` over `n` ranks. */
function split(x: Int32Array, wide: Int32Array, n: number): void {
  for (let i = 0; i < x.length; i++) {
    const q = Math.floor(x[i] / n);
    wide[2 * i] = q;
    wide[2 * i + 1] = x[i] - n * q;
  }
}

/** `out[i]` ← the truncated mean from the summed q and r of element i over `n` ranks. */
function combine(wide: Int32Array, out: Int32Array, n: number): void {
  for (let i = 0; i < out.length; i++) {
    const rs = wide[2 * i + 1];
    const floor = wide[2 * i] + Math.floor(rs / n);
    out[i] = floor < 0 && rs % n !== 0 ? floor + 1 : floor;
  }
}

/**
 * Runs the sum of split terms over host views (the collective's host algorithm, bound as the
 * collective binds its own); resolves once `output` holds the mean, on the ranks it writes.
 */
async function meanOnHost<C extends Averaging>(
  ctx: CollectiveContext,
  collective: C,
  input: Int32Array,
  output: Int32Array,
  root: number,
  layout: Layout,
): Promise<void> {
  const n = ctx.size, spec = COLLECTIVES[collective];
  const wide = ctx.scratch("i32", 2 * input.length, SLOT) as Int32Array;
  split(input, wide, n);
  // A reduce-scatter's output is one block of its input.
  const blocked = output.length < input.length;
  const result = blocked ? ctx.scratch("i32", 2 * output.length, SLOT + 1) as Int32Array : wide;
  // Each element is two now: so are the blocks of a call with per-rank counts.
  const twice = (list: readonly number[]) => list.map((v) => 2 * v);
  const wideLayout: Layout = {
    sendCounts: twice(layout.sendCounts),
    sendDispls: twice(layout.sendDispls),
    recvCounts: twice(layout.recvCounts),
    recvDispls: twice(layout.recvDispls),
  };
  const run = spec.bind(hostAlgorithm(ctx, collective, wide.byteLength), "sum", root, wideLayout);
  const pending = run(ctx, wide, result);
  if (pending) await pending;
  // A reduce's other ranks keep their input as it was.
  if (spec.staging.writes?.(ctx.rank === root) ?? true) combine(result, output, n);
}

/** The exact mean's run on host views. */
export function exactMeanOnHost(
  collective: Averaging,
  root: number,
  layout: Layout,
): (ctx: CollectiveContext, a: TypedArray, b: TypedArray) => Promise<void> {
  return (ctx, a, b) => meanOnHost(ctx, collective, a as Int32Array, b as Int32Array, root, layout);
}

/** The exact mean's run on device buffers: through host copies of them. */
export function exactMeanOnDevice(
  collective: Averaging,
  root: number,
  layout: Layout,
): (ctx: CollectiveContext, a: GpuBuffer, b: GpuBuffer) => Promise<void> {
  return async (ctx, a, b) => {
    const input = ctx.scratch("i32", a.length, SLOT + 2) as Int32Array;
    await a.read(input);
    const output = ctx.scratch("i32", b.length, SLOT + 3) as Int32Array;
    await meanOnHost(ctx, collective, input, output, root, layout);
    if (collective !== "reduce" || ctx.rank === root) await b.write(output);
  };
}
