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
import {
  type CollectiveName,
  type Dtype,
  DTYPE_INFO,
  type KernelOp,
  type TypedArray,
} from "../types.ts";
import type { DeviceAlgorithm } from "./algorithm.ts";
import type { CollectiveContext, Completion, Signatures } from "./context.ts";

/** A pipelined buffer is cut into this many segments, each within the bounds below. */
const SEGMENTS = 8;
const MIN_SEGMENT_BYTES = 4 * 1024 * 1024, MAX_SEGMENT_BYTES = 32 * 1024 * 1024;
/** Segments whose downloads are in flight while one is reduced. */
const DEPTH = 4;
/** First scratch slot of staging (host algorithms use the ones below). */
const SLOT = 4;

/** Every staged collective as one form: `send` and `recv` with a reduce op and a root. */
interface StagedCall {
  send: CommBuffer;
  recv: CommBuffer;
  op: KernelOp;
  root: number;
}

/**
 * How a collective crosses to the host: which operand is `size` blocks of a segment's elements
 * (the other holds one block), whether the host collective works on one buffer (the send view,
 * in place), which ranks download `send` and upload `recv`, and the host call itself on host
 * views of a segment.
 */
interface Shape {
  blocked?: "send" | "recv";
  inPlace?: boolean;
  reads?: (isRoot: boolean) => boolean;
  writes?: (isRoot: boolean) => boolean;
  /** The operand whose bytes pick the host algorithm (equal on every rank). */
  pickBy: "send" | "recv";
  host(ctx: CollectiveContext, bytes: number, call: HostCall): Completion;
}

/** A staged call on host views of one segment. */
interface HostCall {
  send: TypedArray;
  recv: TypedArray;
  op: KernelOp;
  root: number;
}

const onRoot = (isRoot: boolean) => isRoot;
const offRoot = (isRoot: boolean) => !isRoot;

const SHAPES: { [C in CollectiveName]: Shape } = {
  allreduce: {
    inPlace: true,
    pickBy: "send",
    host: (ctx, bytes, c) => ctx.hostAlgorithm("allreduce", bytes)(ctx, c.send, c.send, c.op),
  },
  bcast: {
    inPlace: true,
    reads: onRoot,
    writes: offRoot,
    pickBy: "send",
    host: (ctx, bytes, c) => ctx.hostAlgorithm("bcast", bytes)(ctx, c.send, c.root),
  },
  reduce: {
    inPlace: true,
    writes: onRoot,
    pickBy: "send",
    host: (ctx, bytes, c) => ctx.hostAlgorithm("reduce", bytes)(ctx, c.send, c.send, c.op, c.root),
  },
  allgather: {
    blocked: "recv",
    pickBy: "recv",
    host: (ctx, bytes, c) => ctx.hostAlgorithm("allgather", bytes)(ctx, c.send, c.recv),
  },
  reduceScatter: {
    blocked: "send",
    pickBy: "send",
    host: (ctx, bytes, c) => ctx.hostAlgorithm("reduceScatter", bytes)(ctx, c.send, c.recv, c.op),
  },
  alltoall: {
    pickBy: "send",
    host: (ctx, bytes, c) => ctx.hostAlgorithm("alltoall", bytes)(ctx, c.send, c.recv),
  },
  // On a gather's other ranks and a scatter's, the placeholder buffer is neither read nor written.
  gather: {
    writes: onRoot,
    pickBy: "send",
    host: (ctx, bytes, c) => ctx.hostAlgorithm("gather", bytes)(ctx, c.send, c.recv, c.root),
  },
  scatter: {
    reads: onRoot,
    pickBy: "recv",
    host: (ctx, bytes, c) => ctx.hostAlgorithm("scatter", bytes)(ctx, c.send, c.recv, c.root),
  },
};

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
async function stage(
  ctx: CollectiveContext,
  shape: Shape,
  call: StagedCall,
  pipelined: boolean,
): Promise<void> {
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
    const pending = shape.host(ctx, bytes, { send, recv, op: call.op, root: call.root });
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

/** Each collective's run in the staged form, over device buffers. */
const RUNS: { [C in CollectiveName]: (pipelined: boolean) => Signatures<GpuBuffer>[C] } = {
  allreduce: (pipelined) => (ctx, input, output, op) =>
    stage(ctx, SHAPES.allreduce, { send: input, recv: output, op, root: 0 }, pipelined),
  bcast: (pipelined) => (ctx, buf, root) =>
    stage(ctx, SHAPES.bcast, { send: buf, recv: buf, op: "sum", root }, pipelined),
  reduce: (pipelined) => (ctx, input, output, op, root) =>
    stage(ctx, SHAPES.reduce, { send: input, recv: output, op, root }, pipelined),
  allgather: (pipelined) => (ctx, send, recv) =>
    stage(ctx, SHAPES.allgather, { send, recv, op: "sum", root: 0 }, pipelined),
  reduceScatter: (pipelined) => (ctx, send, recv, op) =>
    stage(ctx, SHAPES.reduceScatter, { send, recv, op, root: 0 }, pipelined),
  alltoall: (pipelined) => (ctx, send, recv) =>
    stage(ctx, SHAPES.alltoall, { send, recv, op: "sum", root: 0 }, pipelined),
  gather: (pipelined) => (ctx, send, recv, root) =>
    stage(ctx, SHAPES.gather, { send, recv, op: "sum", root }, pipelined),
  scatter: (pipelined) => (ctx, send, recv, root) =>
    stage(ctx, SHAPES.scatter, { send, recv, op: "sum", root }, pipelined),
};

/** Pipelining pays once a buffer is four segments or more. */
const PIPELINED_FROM = 16 * 1024 * 1024;

/** `staged` (whole buffers) or `pipelined` (segments in flight) for collective `C`. */
function staging<C extends CollectiveName>(collective: C, pipelined: boolean): DeviceAlgorithm<C> {
  return {
    name: pipelined ? "pipelined" : "staged",
    collective,
    needs: "staging",
    run: RUNS[collective](pipelined),
    winsBelow: () => pipelined ? Infinity : PIPELINED_FROM,
  };
}

const staged = <C extends CollectiveName>(collective: C) => staging(collective, false);
const pipelined = <C extends CollectiveName>(collective: C) => staging(collective, true);

/** `staged` for every collective. */
export const STAGED = [
  staged("allreduce"),
  staged("bcast"),
  staged("reduce"),
  staged("allgather"),
  staged("reduceScatter"),
  staged("alltoall"),
  staged("gather"),
  staged("scatter"),
] as const;

/**
 * `pipelined` where segments pay (alltoall, gather and scatter move whole blocks to and from
 * every rank and stay `staged`).
 */
export const PIPELINED = [
  pipelined("allreduce"),
  pipelined("bcast"),
  pipelined("reduce"),
  pipelined("allgather"),
  pipelined("reduceScatter"),
] as const;
