/**
 * Every primitive described once for the harness and the tests (nccl-tests style): which buffers
 * it needs, exact integer-valued inputs unique per rank and index, the expected output, and its
 * bus-bandwidth factor.
 * @module
 */

import type { Communicator } from "../primitives/communicator/communicator.ts";
import { type CommBuffer, HostBuffer } from "../primitives/memory/comm_buffer.ts";
import { ManagedBuffer } from "../primitives/memory/managed.ts";
import type { CollectiveName } from "../primitives/registry.ts";
import {
  type Dtype,
  DTYPE_INFO,
  type MemoryKind,
  type ReduceOp,
  type Side,
  type TypedArray,
} from "../primitives/types.ts";

/** Primitive names as the CLI and CSV spell them. */
export type PrimitiveName =
  | "sendrecv"
  | "bcast"
  | "reduce"
  | "allreduce"
  | "allgather"
  | "reduce_scatter";

/** Options one run of a primitive takes. */
export interface CaseOptions {
  dtype: Dtype;
  memory: MemoryKind;
  op: ReduceOp;
  root: number;
  algorithm: string;
  /** Managed memory: touch the buffers on this side before every operation (OMB's `-d managed`). */
  touch?: Side;
}

/**
 * A primitive set up on one rank for one size. Inputs and outputs go through the buffers' own
 * `read`/`write`, so every memory kind is filled and checked the same way.
 */
export interface SizedCase {
  /** Writes the inputs (call before a checked run). */
  fill(): Promise<void>;
  /** One operation. */
  run(): Promise<void>;
  /** Elements of this rank's output that differ from the exact expected value. */
  wrong(): Promise<number>;
  /** With `--touch`: writes the buffers on that side, so the next operation migrates them. */
  touch?(): Promise<void>;
}

/**
 * A primitive's buffers allocated once for the largest size (as nccl-tests does), so a sweep
 * neither reallocates nor page-faults fresh memory between sizes.
 */
export interface PreparedCase {
  /** The case on the first `count` elements (at most the prepared count). */
  sized(count: number): SizedCase;
  /** Releases the buffers. */
  free(): void;
}

/** What the harness needs to know about a primitive. */
export interface PrimitiveSpec {
  name: PrimitiveName;
  /** Registry name for algorithm choice; undefined for point-to-point. */
  collective?: CollectiveName;
  /** nccl-tests' busbw = algbw × factor. */
  busFactor(ranks: number): number;
  /** The same factor as text for table headers, in terms of n ranks. */
  busFormula: string;
  /** Elements this primitive holds per rank for a `count`-element case (for memory checks). */
  footprint(count: number, ranks: number): number;
  /**
   * Largest count not above `count` the primitive can run on `ranks` (allgather and reduce-scatter
   * need a multiple of the rank count).
   */
  fit(count: number, ranks: number): number;
  /** Allocates buffers for up to `maxCount` elements (the larger buffer, as in nccl-tests). */
  prepare(comm: Communicator, maxCount: number, options: CaseOptions): PreparedCase;
}

/**
 * Inputs of a `size`-rank group cycle through this many integers, centred on 0: 2^20 up to 32
 * ranks, fewer above, so that every partial sum over the group stays within 2^24 and is exact
 * in f32 (size × modulus / 2 ≤ 2^24), whatever order an algorithm adds in.
 */
export function inputModulus(size: number): number {
  let m = 2 ** 20;
  while (size * m > 2 ** 25) m /= 2;
  return m;
}

/**
 * Input element i of rank r: integer-valued, unique per (rank, index) for i·size + r below
 * {@linkcode inputModulus}, and small enough that any sum over the group is exact in f32.
 * `prod` inputs are ±1 and 2 so products stay exact too (i32 products wrap, exactly, as the
 * kernels' do).
 */
export function inputValue(op: ReduceOp, rank: number, size: number, i: number): number {
  if (op === "prod") return [1, -1, 2][(i + 2 * rank) % 3];
  const m = inputModulus(size);
  return ((i * size + rank) % m) - m / 2;
}

/** The exact reduction over all ranks of element i, rounded as the dtype stores it. */
export function expectedReduction(
  op: ReduceOp,
  dtype: Dtype,
  size: number,
  value: (rank: number) => number,
): number {
  let acc = value(0);
  for (let r = 1; r < size; r++) {
    const v = value(r);
    acc = op === "prod"
      ? (dtype === "i32" ? Math.imul(acc, v) : acc * v)
      : op === "max"
      ? Math.max(acc, v)
      : op === "min"
      ? Math.min(acc, v)
      : acc + v;
  }
  return op === "avg" ? average(acc, size, dtype) : acc;
}

function average(sum: number, size: number, dtype: Dtype): number {
  return dtype === "i32"
    ? Math.trunc(sum / size)
    : dtype === "f32"
    ? Math.fround(sum / size)
    : sum / size;
}

/**
 * Inputs repeat along the index, and so do results: `(i·size + r) mod m` with period
 * m / gcd(size, m) (m the power of two {@linkcode inputModulus}), `prod` inputs every 3. Filling
 * and checking work on one period.
 */
function period(op: ReduceOp, size: number): number {
  if (op === "prod") return 3;
  let p = inputModulus(size);
  while (size % 2 === 0 && p > 1) {
    size /= 2;
    p /= 2;
  }
  return p;
}

/** The first `min(length, period)` values of `value(i)`, as `dtype`. */
function onePeriod(
  dtype: Dtype,
  length: number,
  period: number,
  value: (i: number) => number,
): TypedArray {
  const out = new DTYPE_INFO[dtype].array(Math.min(length, period));
  for (let i = 0; i < out.length; i++) out[i] = value(i);
  return out;
}

/** Writes rank `rank`'s inputs into `view`. */
export function fillInput(view: TypedArray, op: ReduceOp, rank: number, size: number): void {
  const one = onePeriod(
    dtypeOfView(view),
    view.length,
    period(op, size),
    (i) => inputValue(op, rank, size, i),
  );
  writePeriodicView(view, one);
}

/** `one` (a period) repeated along `view`: whole periods, doubling, at memcpy speed. */
function writePeriodicView(view: TypedArray, one: TypedArray): void {
  view.set(one);
  for (let filled = one.length; filled < view.length; filled *= 2) {
    view.copyWithin(filled, 0, Math.min(filled, view.length - filled));
  }
}

/** `one` (a period) repeated along `buf`, through its `write` unless it is in host memory. */
async function writePeriodic(buf: CommBuffer, one: TypedArray): Promise<void> {
  if (buf instanceof HostBuffer) return writePeriodicView(buf.view, one);
  for (let at = 0; at < buf.length; at += one.length) {
    await buf.write(one.subarray(0, Math.min(one.length, buf.length - at)), at);
  }
}

/** Elements of `view` that differ from `expected` repeated along it, from element `start` on. */
function countWrong(view: TypedArray, expected: TypedArray, phase = 0): number {
  let wrong = 0;
  for (let i = 0, k = phase; i < view.length; i++, k = k + 1 === expected.length ? 0 : k + 1) {
    if (view[i] !== expected[k]) wrong++;
  }
  return wrong;
}

/** Elements read from a device buffer per piece when checking it. */
const CHECK_PIECE = 1 << 22;

/** Elements of `buf` that differ from `expected` repeated along it. */
async function countWrongIn(buf: CommBuffer, expected: TypedArray): Promise<number> {
  if (buf instanceof HostBuffer) return countWrong(buf.view, expected);
  const piece = new DTYPE_INFO[buf.dtype].array(Math.min(buf.length, CHECK_PIECE));
  let wrong = 0;
  for (let at = 0; at < buf.length; at += piece.length) {
    const part = piece.subarray(0, Math.min(piece.length, buf.length - at));
    await buf.read(part, at);
    wrong += countWrong(part, expected, at % expected.length);
  }
  return wrong;
}

/** Zeros in `buf` (so stale results show). */
function clear(buf: CommBuffer): Promise<void> {
  if (buf instanceof HostBuffer) return Promise.resolve(void buf.view.fill(0));
  return writePeriodic(buf, new DTYPE_INFO[buf.dtype].array(Math.min(buf.length, 1 << 20)));
}

/** Writes rank `rank`'s inputs into `buf`. */
function writeInput(buf: CommBuffer, op: ReduceOp, rank: number, size: number): Promise<void> {
  const value = (i: number) => inputValue(op, rank, size, i);
  return writePeriodic(buf, onePeriod(buf.dtype, buf.length, period(op, size), value));
}

/** The usual set-up: this rank's inputs in `send`, zeros in `recv` (so stale results show). */
async function fillSendClearRecv(
  send: CommBuffer,
  recv: CommBuffer,
  op: ReduceOp,
  rank: number,
  size: number,
): Promise<void> {
  await writeInput(send, op, rank, size);
  await clear(recv);
}

/** Elements of `buf` that differ from rank `rank`'s inputs. */
function wrongInputs(buf: CommBuffer, op: ReduceOp, rank: number, size: number): Promise<number> {
  const value = (i: number) => inputValue(op, rank, size, i);
  return countWrongIn(buf, onePeriod(buf.dtype, buf.length, period(op, size), value));
}

/** The exact reduction of elements `offset…` (one period of them), as `dtype`. */
function reducedPeriod(
  op: ReduceOp,
  dtype: Dtype,
  size: number,
  length: number,
  offset: number,
): TypedArray {
  const exact = (k: number) =>
    expectedReduction(op, dtype, size, (r) => inputValue(op, r, size, offset + k));
  return onePeriod(dtype, length, period(op, size), exact);
}

/** Elements of `view` (elements `offset…` of the result) that differ from the exact reduction. */
export function wrongReduced(
  view: TypedArray,
  op: ReduceOp,
  dtype: Dtype,
  size: number,
  offset = 0,
): number {
  return countWrong(view, reducedPeriod(op, dtype, size, view.length, offset));
}

/** {@linkcode wrongReduced} of any buffer. */
function wrongReducedIn(
  buf: CommBuffer,
  op: ReduceOp,
  size: number,
  offset = 0,
): Promise<number> {
  return countWrongIn(buf, reducedPeriod(op, buf.dtype, size, buf.length, offset));
}

function dtypeOfView(view: TypedArray): Dtype {
  return view instanceof Float64Array ? "f64" : view instanceof Int32Array ? "i32" : "f32";
}

function alloc(comm: Communicator, count: number, o: CaseOptions): CommBuffer {
  return comm.alloc(count, { dtype: o.dtype, memory: o.memory });
}

/** The first `count` elements of `buf`. */
function head(buf: CommBuffer, count: number): CommBuffer {
  return buf.subarray(0, count);
}

/** Copies `src` into `dst` (same length and dtype) through host memory. */
async function copy(src: CommBuffer, dst: CommBuffer): Promise<void> {
  const through = new DTYPE_INFO[src.dtype].array(src.length);
  await src.read(through);
  await dst.write(through);
}

/**
 * A prepared case over `bufs`; each sized case gets a `touch` of the managed buffers it uses when
 * the options ask for one.
 */
function prepared(
  comm: Communicator,
  o: CaseOptions,
  bufs: CommBuffer[],
  sized: (count: number) => SizedCase & { buffers: CommBuffer[] },
): PreparedCase {
  return {
    sized(count) {
      const { buffers, ...c } = sized(count);
      const side = o.touch;
      const managed = buffers.filter((b): b is ManagedBuffer => b instanceof ManagedBuffer);
      if (side && managed.length > 0) {
        c.touch = async () => {
          for (const b of managed) await b.touch(side);
        };
      }
      return c;
    },
    free: () => bufs.forEach((b) => comm.free(b)),
  };
}

const whole = (count: number) => count;
const multipleOfRanks = (count: number, ranks: number) => count - (count % ranks);

const sendrecv: PrimitiveSpec = {
  name: "sendrecv",
  busFactor: () => 1,
  busFormula: "1",
  footprint: (count) => 2 * count,
  fit: whole,
  prepare(comm, maxCount, o) {
    const sendBuf = alloc(comm, maxCount, o), recvBuf = alloc(comm, maxCount, o);
    const { rank, size } = comm;
    const right = (rank + 1) % size, left = (rank - 1 + size) % size;
    return prepared(comm, o, [sendBuf, recvBuf], (count) => {
      const send = head(sendBuf, count), recv = head(recvBuf, count);
      return {
        buffers: [send, recv],
        fill: () => fillSendClearRecv(send, recv, o.op, rank, size),
        run: async () => {
          if (size === 1) return copy(send, recv);
          await Promise.all([comm.send(send, right), comm.recv(recv, left)]);
        },
        wrong: () => wrongInputs(recv, o.op, size === 1 ? rank : left, size),
      };
    });
  },
};

const bcast: PrimitiveSpec = {
  name: "bcast",
  collective: "bcast",
  busFactor: () => 1,
  busFormula: "1",
  footprint: (count) => count,
  fit: whole,
  prepare(comm, maxCount, o) {
    const full = alloc(comm, maxCount, o);
    const { rank, size } = comm;
    return prepared(comm, o, [full], (count) => {
      const buf = head(full, count);
      // One options object per size, as a user's loop makes it: the timed loop allocates nothing.
      const options = { root: o.root, algorithm: o.algorithm };
      return {
        buffers: [buf],
        fill: () => rank === o.root ? writeInput(buf, o.op, rank, size) : clear(buf),
        run: () => comm.bcast(buf, options),
        wrong: () => wrongInputs(buf, o.op, o.root, size),
      };
    });
  },
};

const reduce: PrimitiveSpec = {
  name: "reduce",
  collective: "reduce",
  busFactor: () => 1,
  busFormula: "1",
  footprint: (count) => 2 * count,
  fit: whole,
  prepare(comm, maxCount, o) {
    const sendBuf = alloc(comm, maxCount, o), recvBuf = alloc(comm, maxCount, o);
    const { rank, size } = comm;
    return prepared(comm, o, [sendBuf, recvBuf], (count) => {
      const send = head(sendBuf, count), recv = head(recvBuf, count);
      const options = { root: o.root, op: o.op, out: recv, algorithm: o.algorithm };
      return {
        buffers: [send, recv],
        fill: () => fillSendClearRecv(send, recv, o.op, rank, size),
        run: () => comm.reduce(send, options),
        wrong: async () =>
          await wrongInputs(send, o.op, rank, size) +
          (rank === o.root ? await wrongReducedIn(recv, o.op, size) : 0),
      };
    });
  },
};

const allreduce: PrimitiveSpec = {
  name: "allreduce",
  collective: "allreduce",
  busFactor: (n) => (2 * (n - 1)) / n,
  busFormula: "2(n-1)/n",
  footprint: (count) => 2 * count,
  fit: whole,
  prepare(comm, maxCount, o) {
    const sendBuf = alloc(comm, maxCount, o), recvBuf = alloc(comm, maxCount, o);
    const { rank, size } = comm;
    return prepared(comm, o, [sendBuf, recvBuf], (count) => {
      const send = head(sendBuf, count), recv = head(recvBuf, count);
      const options = { op: o.op, out: recv, algorithm: o.algorithm };
      return {
        buffers: [send, recv],
        fill: () => fillSendClearRecv(send, recv, o.op, rank, size),
        run: () => comm.allreduce(send, options),
        wrong: () => wrongReducedIn(recv, o.op, size),
      };
    });
  },
};

const allgather: PrimitiveSpec = {
  name: "allgather",
  collective: "allgather",
  busFactor: (n) => (n - 1) / n,
  busFormula: "(n-1)/n",
  footprint: (count, ranks) => count + count / ranks,
  fit: multipleOfRanks,
  prepare(comm, maxCount, o) {
    const { rank, size } = comm;
    const sendBuf = alloc(comm, Math.floor(maxCount / size), o);
    const recvBuf = alloc(comm, maxCount, o);
    return prepared(comm, o, [sendBuf, recvBuf], (count) => {
      const n = Math.floor(count / size);
      const send = head(sendBuf, n), recv = head(recvBuf, n * size);
      const options = { algorithm: o.algorithm };
      return {
        buffers: [send, recv],
        fill: () => fillSendClearRecv(send, recv, o.op, rank, size),
        run: () => comm.allgather(send, recv, options),
        wrong: async () => {
          let wrong = 0;
          for (let r = 0; r < size; r++) {
            wrong += await wrongInputs(recv.subarray(r * n, (r + 1) * n), o.op, r, size);
          }
          return wrong;
        },
      };
    });
  },
};

const reduceScatter: PrimitiveSpec = {
  name: "reduce_scatter",
  collective: "reduceScatter",
  busFactor: (n) => (n - 1) / n,
  busFormula: "(n-1)/n",
  footprint: (count, ranks) => count + count / ranks,
  fit: multipleOfRanks,
  prepare(comm, maxCount, o) {
    const { rank, size } = comm;
    const sendBuf = alloc(comm, maxCount, o);
    const recvBuf = alloc(comm, Math.floor(maxCount / size), o);
    return prepared(comm, o, [sendBuf, recvBuf], (count) => {
      const n = Math.floor(count / size);
      const send = head(sendBuf, n * size), recv = head(recvBuf, n);
      const options = { op: o.op, algorithm: o.algorithm };
      return {
        buffers: [send, recv],
        fill: () => fillSendClearRecv(send, recv, o.op, rank, size),
        run: () => comm.reduceScatter(send, recv, options),
        wrong: () => wrongReducedIn(recv, o.op, size, rank * n),
      };
    });
  },
};

/** All primitives, by CLI name. */
export const PRIMITIVES: Readonly<Record<PrimitiveName, PrimitiveSpec>> = {
  sendrecv,
  bcast,
  reduce,
  allreduce,
  allgather,
  reduce_scatter: reduceScatter,
};
