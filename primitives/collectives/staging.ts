/**
 * Collectives on device buffers (`gpu` memory) over host transports: the MPI + cudaMalloc and
 * CUDA-aware MPI analogues. Each rank owns its own device; data crosses to the host, the host
 * collective `auto` picks runs there (shm_direct on `shm`, messages elsewhere), and the result
 * goes back. Two algorithms, one engine over per-collective segment plans:
 *
 * - `staged`: the whole buffer down, the host collective, the whole buffer up, one after the
 *   other (what a user of non-CUDA-aware MPI writes);
 * - `pipelined`: segments of an eighth of the buffer (4 to 32 MiB), with the downloads of the next
 *   segments in flight while the host collective runs on this one and its upload is queued (what
 *   CUDA-aware MPI and Gloo's CUDA path do). Segments are large because every wave of downloads
 *   costs one ~11 ms completion in Deno, whatever its size.
 * @module
 */

import type { CommBuffer } from "../memory/comm_buffer.ts";
import { type Dtype, DTYPE_INFO, type KernelOp, type TypedArray } from "../types.ts";
import type { CollectiveContext, Completion, GatherAlgorithm, HostAlgorithms } from "./context.ts";

/** A pipelined buffer is cut into this many segments, each within the bounds below. */
const SEGMENTS = 8;
const MIN_SEGMENT_BYTES = 4 * 1024 * 1024, MAX_SEGMENT_BYTES = 32 * 1024 * 1024;
/** Segments whose downloads are in flight while one is reduced. */
const DEPTH = 4;
/** First scratch slot of staging (host algorithms use the ones below). */
const SLOT = 4;

/** What one segment moves: device → host, the host collective, host → device. */
interface Segment {
  reads: [CommBuffer, TypedArray][];
  run: () => Completion;
  writes: [CommBuffer, TypedArray][];
}

/** A collective cut into segments: how many, and segment `k` on host buffers from `host`. */
interface Plan {
  segments: number;
  segment(k: number, hostView: (slot: number, count: number) => TypedArray): Segment;
}

/** Runs a plan with `depth` segments' downloads in flight (1: staged, one after the other). */
async function stage(ctx: CollectiveContext, dtype: Dtype, plan: Plan, depth: number) {
  // depth + 1 host slots: the next downloads never land where the host collective is working.
  const slots = depth + 1;
  const views = (k: number) => (slot: number, count: number) =>
    ctx.scratch(dtype, count, SLOT + (k % slots) * 2 + slot);
  const segments: Segment[] = [];
  const downloads: Promise<unknown>[] = [];
  const start = (k: number) => {
    segments[k] = plan.segment(k, views(k));
    downloads[k] = Promise.all(segments[k].reads.map(([device, host]) => device.read(host)));
  };
  for (let k = 0; k < Math.min(depth, plan.segments); k++) start(k);
  for (let k = 0; k < plan.segments; k++) {
    await downloads[k];
    if (k + depth < plan.segments) start(k + depth);
    const pending = segments[k].run();
    if (pending) await pending;
    for (const [device, host] of segments[k].writes) await device.write(host);
  }
}

/** Segments of `count` elements of `dtype` in units of `unit` elements. */
function cut(count: number, dtype: Dtype, unit: number, pipelined: boolean): number {
  if (!pipelined) return 1;
  const bytes = count * unit * DTYPE_INFO[dtype].bytes;
  const segment = Math.min(MAX_SEGMENT_BYTES, Math.max(MIN_SEGMENT_BYTES, bytes / SEGMENTS));
  return Math.max(1, Math.ceil(bytes / segment));
}

/** `[start, end)` of segment `k` of `segments` over `count`. */
function span(count: number, segments: number, k: number): [number, number] {
  const per = Math.ceil(count / segments);
  return [Math.min(count, k * per), Math.min(count, (k + 1) * per)];
}

function allreduce(host: HostAlgorithms, pipelined: boolean) {
  return (ctx: CollectiveContext, input: CommBuffer, output: CommBuffer, op: KernelOp) => {
    const n = input.length, dtype = input.dtype;
    const segments = cut(n, dtype, 1, pipelined);
    return stage(ctx, dtype, {
      segments,
      segment(k, hostView) {
        const [s, e] = span(n, segments, k);
        const h = hostView(0, e - s);
        const run = host.allreduce(ctx, h.byteLength);
        return {
          reads: [[input.subarray(s, e), h]],
          run: () => run(ctx, h, h, op),
          writes: [[output.subarray(s, e), h]],
        };
      },
    }, pipelined ? DEPTH : 1);
  };
}

function bcast(host: HostAlgorithms, pipelined: boolean) {
  return (ctx: CollectiveContext, buf: CommBuffer, root: number) => {
    const n = buf.length, dtype = buf.dtype, isRoot = ctx.rank === root;
    const segments = cut(n, dtype, 1, pipelined);
    return stage(ctx, dtype, {
      segments,
      segment(k, hostView) {
        const [s, e] = span(n, segments, k);
        const h = hostView(0, e - s), part = buf.subarray(s, e);
        const run = host.bcast(ctx, h.byteLength);
        return {
          reads: isRoot ? [[part, h]] : [],
          run: () => run(ctx, h, root),
          writes: isRoot ? [] : [[part, h]],
        };
      },
    }, pipelined ? DEPTH : 1);
  };
}

function reduce(host: HostAlgorithms, pipelined: boolean) {
  return (
    ctx: CollectiveContext,
    input: CommBuffer,
    output: CommBuffer,
    op: KernelOp,
    root: number,
  ) => {
    const n = input.length, dtype = input.dtype, isRoot = ctx.rank === root;
    const segments = cut(n, dtype, 1, pipelined);
    return stage(ctx, dtype, {
      segments,
      segment(k, hostView) {
        const [s, e] = span(n, segments, k);
        const h = hostView(0, e - s);
        const run = host.reduce(ctx, h.byteLength);
        return {
          reads: [[input.subarray(s, e), h]],
          run: () => run(ctx, h, h, op, root),
          writes: isRoot ? [[output.subarray(s, e), h]] : [],
        };
      },
    }, pipelined ? DEPTH : 1);
  };
}

function allgather(host: HostAlgorithms, pipelined: boolean) {
  return (ctx: CollectiveContext, send: CommBuffer, recv: CommBuffer) => {
    const n = send.length, dtype = send.dtype, size = ctx.size;
    const segments = cut(n, dtype, size, pipelined);
    return stage(ctx, dtype, {
      segments,
      segment(k, hostView) {
        const [s, e] = span(n, segments, k), len = e - s;
        const hs = hostView(0, len), hr = hostView(1, size * len);
        const run = host.allgather(ctx, hr.byteLength);
        return {
          reads: [[send.subarray(s, e), hs]],
          run: () => run(ctx, hs, hr),
          writes: Array.from(
            { length: size },
            (_, q) =>
              [recv.subarray(q * n + s, q * n + e), hr.subarray(q * len, (q + 1) * len)] as [
                CommBuffer,
                TypedArray,
              ],
          ),
        };
      },
    }, pipelined ? DEPTH : 1);
  };
}

function reduceScatter(host: HostAlgorithms, pipelined: boolean) {
  return (ctx: CollectiveContext, send: CommBuffer, recv: CommBuffer, op: KernelOp) => {
    const n = recv.length, dtype = recv.dtype, size = ctx.size;
    const segments = cut(n, dtype, size, pipelined);
    return stage(ctx, dtype, {
      segments,
      segment(k, hostView) {
        const [s, e] = span(n, segments, k), len = e - s;
        const hs = hostView(0, size * len), hr = hostView(1, len);
        const run = host.reduceScatter(ctx, hs.byteLength);
        return {
          reads: Array.from(
            { length: size },
            (_, q) =>
              [send.subarray(q * n + s, q * n + e), hs.subarray(q * len, (q + 1) * len)] as [
                CommBuffer,
                TypedArray,
              ],
          ),
          run: () => run(ctx, hs, hr, op),
          writes: [[recv.subarray(s, e), hr]],
        };
      },
    }, pipelined ? DEPTH : 1);
  };
}

/**
 * `staged` alltoall, gather and scatter: the buffers the rank reads come down whole, the host
 * collective runs, and the buffer it writes goes up (on a gather's other ranks and a scatter's,
 * the placeholder buffer is neither read nor written).
 */
function blocks(
  collective: "alltoall" | "gather" | "scatter",
  host: HostAlgorithms,
) {
  return (ctx: CollectiveContext, send: CommBuffer, recv: CommBuffer, root = 0) => {
    const isRoot = ctx.rank === root;
    const reads = collective !== "scatter" || isRoot;
    const writes = collective !== "gather" || isRoot;
    return stage(ctx, send.dtype, {
      segments: 1,
      segment(_, hostView) {
        const hs = hostView(0, send.length), hr = hostView(1, recv.length);
        const run = host[collective](ctx, (collective === "scatter" ? hr : hs).byteLength);
        return {
          reads: reads ? [[send, hs]] : [],
          run: () => (run as GatherAlgorithm)(ctx, hs, hr, root),
          writes: writes ? [[recv, hr]] : [],
        };
      },
    }, 1);
  };
}

/** `staged` and `pipelined` of every collective around the host algorithms `host` picks. */
export function stagingAlgorithms(host: HostAlgorithms) {
  return {
    alltoall: { staged: blocks("alltoall", host) },
    gather: { staged: blocks("gather", host) },
    scatter: { staged: blocks("scatter", host) },
    allreduce: { staged: allreduce(host, false), pipelined: allreduce(host, true) },
    bcast: { staged: bcast(host, false), pipelined: bcast(host, true) },
    reduce: { staged: reduce(host, false), pipelined: reduce(host, true) },
    allgather: { staged: allgather(host, false), pipelined: allgather(host, true) },
    reduceScatter: { staged: reduceScatter(host, false), pipelined: reduceScatter(host, true) },
  } as const;
}
