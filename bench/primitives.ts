/**
 * Every primitive described once for the harness and the tests (nccl-tests style): which buffers
 * it needs, exact integer-valued inputs unique per rank and index, the expected output, and its
 * bus-bandwidth factor.
 * @module
 */

import type { Communicator } from "../primitives/communicator.ts";
import type { CommBuffer } from "../primitives/memory/comm_buffer.ts";
import type { CollectiveName } from "../primitives/registry.ts";
import type { Dtype, MemoryKind, ReduceOp, TypedArray } from "../primitives/types.ts";

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
}

/** A primitive set up on one rank for one size. */
export interface SizedCase {
  /** Writes the inputs (call before a checked run). */
  fill(): void;
  /** One operation. */
  run(): Promise<void>;
  /** Elements of this rank's output that differ from the exact expected value. */
  wrong(): number;
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
 * Input element i of rank r: integer-valued, unique per (rank, index) for i·size + r < 2^20, and
 * small enough that any sum over 8 ranks is exact in f32. `prod` inputs are ±1 and 2 so products
 * stay exact too.
 */
export function inputValue(op: ReduceOp, rank: number, size: number, i: number): number {
  if (op === "prod") return [1, -1, 2][(i + 2 * rank) % 3];
  return ((i * size + rank) % 1048576) - 524288;
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
      ? acc * v
      : op === "max"
      ? Math.max(acc, v)
      : op === "min"
      ? Math.min(acc, v)
      : acc + v;
  }
  if (op !== "avg") return acc;
  return dtype === "i32"
    ? Math.trunc(acc / size)
    : dtype === "f32"
    ? Math.fround(acc / size)
    : acc / size;
}

function fillInput(view: TypedArray, op: ReduceOp, rank: number, size: number, offset = 0): void {
  for (let i = 0; i < view.length; i++) view[i] = inputValue(op, rank, size, offset + i);
}

function countWrong(view: TypedArray, expected: (i: number) => number): number {
  let wrong = 0;
  for (let i = 0; i < view.length; i++) if (view[i] !== expected(i)) wrong++;
  return wrong;
}

function alloc(comm: Communicator, count: number, o: CaseOptions): CommBuffer {
  return comm.alloc(count, { dtype: o.dtype, memory: o.memory });
}

/** The first `count` elements of `buf`, as a typed array the communicator accepts. */
function head(buf: CommBuffer, count: number): TypedArray {
  return buf.view.subarray(0, count) as TypedArray;
}

function prepared(comm: Communicator, bufs: CommBuffer[], sized: PreparedCase["sized"]) {
  return { sized, free: () => bufs.forEach((b) => comm.free(b)) };
}

const whole = (count: number) => count;
const multipleOfRanks = (count: number, ranks: number) => count - (count % ranks);

const sendrecv: PrimitiveSpec = {
  name: "sendrecv",
  busFactor: () => 1,
  footprint: (count) => 2 * count,
  fit: whole,
  prepare(comm, maxCount, o) {
    const sendBuf = alloc(comm, maxCount, o), recvBuf = alloc(comm, maxCount, o);
    const { rank, size } = comm;
    const right = (rank + 1) % size, left = (rank - 1 + size) % size;
    return prepared(comm, [sendBuf, recvBuf], (count) => {
      const send = head(sendBuf, count), recv = head(recvBuf, count);
      return {
        fill: () => {
          fillInput(send, o.op, rank, size);
          recv.fill(0);
        },
        run: async () => {
          if (size === 1) return recv.set(send);
          await Promise.all([comm.send(send, right), comm.recv(recv, left)]);
        },
        wrong: () => countWrong(recv, (i) => inputValue(o.op, size === 1 ? rank : left, size, i)),
      };
    });
  },
};

const bcast: PrimitiveSpec = {
  name: "bcast",
  collective: "bcast",
  busFactor: () => 1,
  footprint: (count) => count,
  fit: whole,
  prepare(comm, maxCount, o) {
    const full = alloc(comm, maxCount, o);
    const { rank, size } = comm;
    return prepared(comm, [full], (count) => {
      const buf = head(full, count);
      return {
        fill: () => {
          if (rank === o.root) fillInput(buf, o.op, rank, size);
          else buf.fill(0);
        },
        run: () => comm.bcast(buf, { root: o.root, algorithm: o.algorithm }),
        wrong: () => countWrong(buf, (i) => inputValue(o.op, o.root, size, i)),
      };
    });
  },
};

const reduce: PrimitiveSpec = {
  name: "reduce",
  collective: "reduce",
  busFactor: () => 1,
  footprint: (count) => 2 * count,
  fit: whole,
  prepare(comm, maxCount, o) {
    const sendBuf = alloc(comm, maxCount, o), recvBuf = alloc(comm, maxCount, o);
    const { rank, size } = comm;
    return prepared(comm, [sendBuf, recvBuf], (count) => {
      const send = head(sendBuf, count), recv = head(recvBuf, count);
      return {
        fill: () => {
          fillInput(send, o.op, rank, size);
          recv.fill(0);
        },
        run: () => comm.reduce(send, { root: o.root, op: o.op, out: recv, algorithm: o.algorithm }),
        wrong: () =>
          countWrong(send, (i) => inputValue(o.op, rank, size, i)) +
          (rank === o.root
            ? countWrong(recv, (i) =>
              expectedReduction(o.op, o.dtype, size, (r) => inputValue(o.op, r, size, i)))
            : 0),
      };
    });
  },
};

const allreduce: PrimitiveSpec = {
  name: "allreduce",
  collective: "allreduce",
  busFactor: (n) => (2 * (n - 1)) / n,
  footprint: (count) => 2 * count,
  fit: whole,
  prepare(comm, maxCount, o) {
    const sendBuf = alloc(comm, maxCount, o), recvBuf = alloc(comm, maxCount, o);
    const { rank, size } = comm;
    return prepared(comm, [sendBuf, recvBuf], (count) => {
      const send = head(sendBuf, count), recv = head(recvBuf, count);
      return {
        fill: () => {
          fillInput(send, o.op, rank, size);
          recv.fill(0);
        },
        run: () => comm.allreduce(send, { op: o.op, out: recv, algorithm: o.algorithm }),
        wrong: () =>
          countWrong(
            recv,
            (i) => expectedReduction(o.op, o.dtype, size, (r) => inputValue(o.op, r, size, i)),
          ),
      };
    });
  },
};

const allgather: PrimitiveSpec = {
  name: "allgather",
  collective: "allgather",
  busFactor: (n) => (n - 1) / n,
  footprint: (count, ranks) => count + count / ranks,
  fit: multipleOfRanks,
  prepare(comm, maxCount, o) {
    const { rank, size } = comm;
    const sendBuf = alloc(comm, Math.floor(maxCount / size), o);
    const recvBuf = alloc(comm, maxCount, o);
    return prepared(comm, [sendBuf, recvBuf], (count) => {
      const n = Math.floor(count / size);
      const send = head(sendBuf, n), recv = head(recvBuf, n * size);
      return {
        fill: () => {
          fillInput(send, o.op, rank, size);
          recv.fill(0);
        },
        run: () => comm.allgather(send, recv, { algorithm: o.algorithm }),
        wrong: () => countWrong(recv, (i) => inputValue(o.op, Math.floor(i / n), size, i % n)),
      };
    });
  },
};

const reduceScatter: PrimitiveSpec = {
  name: "reduce_scatter",
  collective: "reduceScatter",
  busFactor: (n) => (n - 1) / n,
  footprint: (count, ranks) => count + count / ranks,
  fit: multipleOfRanks,
  prepare(comm, maxCount, o) {
    const { rank, size } = comm;
    const sendBuf = alloc(comm, maxCount, o);
    const recvBuf = alloc(comm, Math.floor(maxCount / size), o);
    return prepared(comm, [sendBuf, recvBuf], (count) => {
      const n = Math.floor(count / size);
      const send = head(sendBuf, n * size), recv = head(recvBuf, n);
      return {
        fill: () => {
          fillInput(send, o.op, rank, size);
          recv.fill(0);
        },
        run: () => comm.reduceScatter(send, recv, { op: o.op, algorithm: o.algorithm }),
        wrong: () =>
          countWrong(
            recv,
            (i) =>
              expectedReduction(o.op, o.dtype, size, (r) => inputValue(o.op, r, size, rank * n + i)),
          ),
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
