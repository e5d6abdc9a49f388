/**
 * Collectives on device buffers (`gpu` memory) over host transports: the MPI + cudaMalloc and
 * CUDA-aware MPI analogues. Each rank owns its own device; data crosses to the host, the host
 * collective `auto` picks runs there (shm_direct where ranks share memory, messages elsewhere),
 * and the result goes back. Two algorithms, one engine over each collective's shape:
 *
 * - `staged`: the whole buffer down, the host collective, the whole buffer up, one after the
 *   other (what a user of non-CUDA-aware MPI writes);
 * - `pipelined`: segments of an eighth of the buffer (4 to 32 MiB), with the downloads of the next
 *   segments in flight while the host collective runs on this one and its upload is queued (what
 *   CUDA-aware MPI and Gloo's CUDA path do). Segments are large because every wave of downloads
 *   costs one completion of the device, whatever its size (docs/memory.md).
 * @module
 */

import type { CommBuffer } from "../memory/comm_buffer.ts";
import type { GpuBuffer } from "../memory/gpu_memory.ts";
import { type Dtype, DTYPE_INFO, type KernelOp, type TypedArray } from "../types.ts";
import type { DeviceAlgorithm } from "./algorithm.ts";
import {
  COLLECTIVE_LIST,
  type CollectiveName,
  COLLECTIVES,
  hostAlgorithm,
} from "./collective_table.ts";
import type { CollectiveContext } from "./context.ts";
import type { Layout } from "./spec.ts";

/** A pipelined buffer is cut into this many segments, each within the bounds below. */
const SEGMENTS = 8;
const MIN_SEGMENT_BYTES = 4 * 1024 * 1024, MAX_SEGMENT_BYTES = 32 * 1024 * 1024;
/** Segments whose downloads are in flight while one is reduced. */
const DEPTH = 4;
/** First scratch slot of staging (host algorithms use the ones below). */
const SLOT = 4;

/** Every staged collective as one form: `send` and `recv` with a reduce op, a root, a layout. */
interface StagedCall {
  send: CommBuffer;
  recv: CommBuffer;
  op: KernelOp;
  root: number;
  layout: Layout;
}

/** A device window and the host view it crosses with. */
type Crossing = [CommBuffer, TypedArray];

/** One segment: its host views, and what crosses each way. */
interface Segment {
  send: TypedArray;
  recv: TypedArray;
  downloads: Crossing[];
  uploads: Crossing[];
}

/**
 * Runs `call` through the host: in segments with `DEPTH` segments' downloads in flight when
 * `pipelined`, else whole (one segment, one download at a time).
 */
async function stage<C extends CollectiveName>(
  ctx: CollectiveContext,
  collective: C,
  call: StagedCall,
  pipelined: boolean,
): Promise<void> {
  const shape = COLLECTIVES[collective].staging;
  const isRoot = ctx.rank === call.root;
  const reads = shape.reads?.(isRoot) ?? true, writes = shape.writes?.(isRoot) ?? true;
  const blocks = (operand: "send" | "recv") => shape.blocked === operand ? ctx.size : 1;
  const dtype = call.send.dtype;
  // Elements of one block: an operand is one block, or `size` blocks of it.
  const n = shape.blocked === "send" ? call.recv.length : call.send.length;
  const segments = pipelined ? segmentCount(n * (shape.blocked ? ctx.size : 1), dtype) : 1;
  const depth = pipelined ? DEPTH : 1;
  // depth + 1 host slots: the next downloads never land where the host collective is working.
  const slots = depth + 1;
  const per = Math.ceil(n / segments);
  const segment = (k: number): Segment => {
    const s = Math.min(n, k * per), e = Math.min(n, (k + 1) * per);
    const slot = SLOT + (k % slots) * 2;
    // A single segment is each buffer whole (a gather's root buffer too, which is larger).
    const hostView = (buf: CommBuffer, operand: "send" | "recv") => {
      const count = segments === 1 ? buf.length : (e - s) * blocks(operand);
      return ctx.scratch(dtype, count, operand === "send" ? slot : slot + 1);
    };
    const windows = (buf: CommBuffer, host: TypedArray, operand: "send" | "recv"): Crossing[] => {
      if (segments === 1) return [[buf, host]];
      if (blocks(operand) === 1) return [[buf.subarray(s, e), host]];
      const len = e - s;
      return Array.from({ length: ctx.size }, (_, q): Crossing => [
        buf.subarray(q * n + s, q * n + e),
        host.subarray(q * len, (q + 1) * len),
      ]);
    };
    const send = hostView(call.send, "send");
    const recv = shape.inPlace ? send : hostView(call.recv, "recv");
    return {
      send,
      recv,
      downloads: reads ? windows(call.send, send, "send") : [],
      uploads: writes ? windows(call.recv, recv, "recv") : [],
    };
  };
  const started: Segment[] = [];
  const downloads: Promise<unknown>[] = [];
  const start = (k: number) => {
    started[k] = segment(k);
    downloads[k] = Promise.all(started[k].downloads.map(([device, host]) => device.read(host)));
  };
  for (let k = 0; k < Math.min(depth, segments); k++) start(k);
  for (let k = 0; k < segments; k++) {
    await downloads[k];
    if (k + depth < segments) start(k + depth);
    const { send, recv, uploads } = started[k];
    const bytes = (shape.pickBy === "send" ? send : recv).byteLength;
    const host = COLLECTIVES[collective].bind(
      hostAlgorithm(ctx, collective, bytes),
      call.op,
      call.root,
      call.layout,
    );
    const pending = host(ctx, send, shape.inPlace ? send : recv);
    if (pending) await pending;
    for (const [device, host] of uploads) await device.write(host);
  }
}

/** Segments a pipelined buffer of `count` elements of `dtype` is cut into. */
function segmentCount(count: number, dtype: Dtype): number {
  const bytes = count * DTYPE_INFO[dtype].bytes;
  const segment = Math.min(MAX_SEGMENT_BYTES, Math.max(MIN_SEGMENT_BYTES, bytes / SEGMENTS));
  return Math.max(1, Math.ceil(bytes / segment));
}

/** Pipelining pays once a buffer is four segments or more. */
const PIPELINED_FROM = 16 * 1024 * 1024;

/** `staged` (whole buffers) or `pipelined` (segments in flight) for collective `C`. */
function staging<C extends CollectiveName>(collective: C, pipelined: boolean): DeviceAlgorithm<C> {
  const run = COLLECTIVES[collective].unbind<GpuBuffer>((ctx, send, recv, op, root, layout) =>
    stage(ctx, collective, { send, recv, op, root, layout }, pipelined)
  );
  return {
    name: pipelined ? "pipelined" : "staged",
    collective,
    needs: "staging",
    run,
    winsBelow: () => pipelined ? Infinity : PIPELINED_FROM,
  };
}

/** `staged` for every collective. */
export const STAGED: readonly DeviceAlgorithm[] = COLLECTIVE_LIST.map((c) =>
  staging(c.name, false)
);

/**
 * `pipelined` where segments pay (not alltoall, gather and scatter, which move whole blocks to
 * and from every rank and stay `staged`).
 */
export const PIPELINED: readonly DeviceAlgorithm[] = COLLECTIVE_LIST
  .filter((c) => c.staging.pipelines)
  .map((c) => staging(c.name, true));
