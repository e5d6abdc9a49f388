/**
 * Every primitive described once for the harness and the tests (nccl-tests style): which buffers
 * it needs, how it is filled and checked with exact inputs (exact_inputs.ts), and its
 * bus-bandwidth factor.
 * @module
 */

import {
  type CommBuffer,
  type Communicator,
  type Dtype,
  ManagedBuffer,
  type MemoryKind,
  type ReduceOp,
} from "../core.ts";
import { type CollectiveName, DTYPE_INFO, type Side } from "../internal.ts";
import {
  clear,
  clearRecvFillSend,
  writeInput,
  wrongInputs,
  wrongReducedIn,
} from "./exact_inputs.ts";

/** Primitive names as the CLI and CSV spell them. */
export type PrimitiveName =
  | "sendrecv"
  | "bcast"
  | "reduce"
  | "allreduce"
  | "allgather"
  | "reduce_scatter"
  | "alltoall"
  | "gather"
  | "scatter";

/** Options one run of a primitive takes. */
export interface CaseOptions {
  /** Element type (`--dtype`). */
  dtype: Dtype;
  /** Memory kind of the buffers (`--memory`). */
  memory: MemoryKind;
  /** Reduce op (`--op`); ignored by primitives without one. */
  op: ReduceOp;
  /** Root rank (`--root`); ignored by primitives without one. */
  root: number;
  /** An algorithm's name, or `auto`. */
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
  /**
   * The case on the first `count` elements (at most the prepared count); `inPlace`: its in-place
   * form, as nccl-tests times it (only for primitives that have one).
   */
  sized(count: number, inPlace?: boolean): SizedCase;
  /** Releases the buffers. */
  free(): void;
}

/** What the harness needs to know about a primitive. */
export interface PrimitiveSpec {
  /** Its name as the CLI and CSV spell it. */
  name: PrimitiveName;
  /** Registry name for algorithm choice; undefined for point-to-point. */
  collective?: CollectiveName;
  /** Whether it takes a reduce op (`--op`). */
  reduces: boolean;
  /** Whether it takes a root (`--root`). */
  rooted: boolean;
  /**
   * Whether it has an in-place form beside the out-of-place one (nccl-tests' second set of
   * columns): the output is the input (allreduce, reduce), or this rank's block of the other
   * buffer (allgather, reduce-scatter, and gather and scatter on the root). bcast's one form is
   * in place already; sendrecv and alltoall have none.
   */
  inPlace: boolean;
  /** nccl-tests' busbw = algbw × factor. */
  busFactor(ranks: number): number;
  /** The same factor as text for table headers, in terms of n ranks. */
  busFormula: string;
  /**
   * The least memory work `ranks` ranks do together in one call, in multiples of its size: bytes
   * written by copies and by binary reductions (read two, write one). The machine's limits bound
   * busbw by it (bench/limits/machine_limits.ts).
   */
  work(ranks: number): { copy: number; reduce: number };
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
  sized: (count: number, inPlace: boolean) => SizedCase & { buffers: CommBuffer[] },
): PreparedCase {
  return {
    sized(count, inPlace = false) {
      const { buffers, ...c } = sized(count, inPlace);
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
  reduces: false,
  rooted: false,
  inPlace: false,
  busFactor: () => 1,
  work: () => ({ copy: 2, reduce: 0 }), // each of the two receives the size
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
        fill: () => clearRecvFillSend(send, recv, o.op, rank, size),
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
  reduces: false,
  rooted: true,
  inPlace: false,
  collective: "bcast",
  busFactor: () => 1,
  work: (n) => ({ copy: n - 1, reduce: 0 }),
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
  reduces: true,
  rooted: true,
  inPlace: true,
  collective: "reduce",
  busFactor: () => 1,
  work: (n) => ({ copy: 0, reduce: n - 1 }),
  busFormula: "1",
  footprint: (count) => 2 * count,
  fit: whole,
  prepare(comm, maxCount, o) {
    const sendBuf = alloc(comm, maxCount, o), recvBuf = alloc(comm, maxCount, o);
    const { rank, size } = comm;
    return prepared(comm, o, [sendBuf, recvBuf], (count, inPlace) => {
      const send = head(sendBuf, count), recv = head(recvBuf, count);
      if (inPlace) {
        const options = { root: o.root, op: o.op, algorithm: o.algorithm };
        return {
          buffers: [recv],
          fill: () => writeInput(recv, o.op, rank, size),
          run: () => comm.reduce(recv, options),
          wrong: () =>
            rank === o.root
              ? wrongReducedIn(recv, o.op, size)
              : wrongInputs(recv, o.op, rank, size),
        };
      }
      const options = { root: o.root, op: o.op, out: recv, algorithm: o.algorithm };
      return {
        buffers: [send, recv],
        fill: () => clearRecvFillSend(send, recv, o.op, rank, size),
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
  reduces: true,
  rooted: false,
  inPlace: true,
  collective: "allreduce",
  busFactor: (n) => (2 * (n - 1)) / n,
  work: (n) => ({ copy: n - 1, reduce: n - 1 }), // reduce-scatter, then allgather
  busFormula: "2(n-1)/n",
  footprint: (count) => 2 * count,
  fit: whole,
  prepare(comm, maxCount, o) {
    const sendBuf = alloc(comm, maxCount, o), recvBuf = alloc(comm, maxCount, o);
    const { rank, size } = comm;
    return prepared(comm, o, [sendBuf, recvBuf], (count, inPlace) => {
      const send = head(sendBuf, count), recv = head(recvBuf, count);
      if (inPlace) {
        const options = { op: o.op, algorithm: o.algorithm };
        return {
          buffers: [recv],
          fill: () => writeInput(recv, o.op, rank, size),
          run: () => comm.allreduce(recv, options),
          wrong: () => wrongReducedIn(recv, o.op, size),
        };
      }
      const options = { op: o.op, out: recv, algorithm: o.algorithm };
      return {
        buffers: [send, recv],
        fill: () => clearRecvFillSend(send, recv, o.op, rank, size),
        run: () => comm.allreduce(send, options),
        wrong: () => wrongReducedIn(recv, o.op, size),
      };
    });
  },
};

/** What the collectives between a block per rank and `size` blocks share (nccl-tests' factor). */
const BETWEEN_BLOCKS: Pick<PrimitiveSpec, "busFactor" | "busFormula" | "footprint" | "fit"> = {
  busFactor: (n) => (n - 1) / n,
  busFormula: "(n-1)/n",
  footprint: (count, ranks) => count + count / ranks,
  fit: multipleOfRanks,
};

/**
 * The buffers of a collective between a block per rank and `size` blocks: `send` is the block and
 * `recv` the whole (allgather, gather), or the other way round (reduce-scatter, scatter). In
 * place, the block is block `inPlaceBlock` of the whole (this rank's, or the root's on the root;
 * undefined: this rank keeps a block of its own).
 */
function blockCase(
  comm: Communicator,
  maxCount: number,
  o: CaseOptions,
  blockSends: boolean,
  inPlaceBlock: number | undefined,
  sized: (n: number, send: CommBuffer, recv: CommBuffer) => SizedCase & { buffers: CommBuffer[] },
): PreparedCase {
  const size = comm.size, blockMax = Math.floor(maxCount / size);
  const sendBuf = alloc(comm, blockSends ? blockMax : maxCount, o);
  const recvBuf = alloc(comm, blockSends ? maxCount : blockMax, o);
  return prepared(comm, o, [sendBuf, recvBuf], (count, inPlace) => {
    const n = Math.floor(count / size);
    const whole = head(blockSends ? recvBuf : sendBuf, n * size);
    const block = inPlace && inPlaceBlock !== undefined
      ? whole.subarray(inPlaceBlock * n, (inPlaceBlock + 1) * n)
      : head(blockSends ? sendBuf : recvBuf, n);
    return blockSends ? sized(n, block, whole) : sized(n, whole, block);
  });
}

/** Elements of `recv`'s blocks that differ from their sender's inputs (block r: `from(r)`). */
async function wrongBlocks(
  recv: CommBuffer,
  n: number,
  size: number,
  o: CaseOptions,
  from: (r: number) => [rank: number, offset: number],
): Promise<number> {
  let wrong = 0;
  for (let r = 0; r < size; r++) {
    const [rank, offset] = from(r);
    wrong += await wrongInputs(recv.subarray(r * n, (r + 1) * n), o.op, rank, size, offset);
  }
  return wrong;
}

const allgather: PrimitiveSpec = {
  name: "allgather",
  reduces: false,
  rooted: false,
  inPlace: true,
  collective: "allgather",
  ...BETWEEN_BLOCKS,
  work: (n) => ({ copy: n - 1, reduce: 0 }), // each rank writes all blocks but its own
  prepare(comm, maxCount, o) {
    const { rank, size } = comm;
    return blockCase(comm, maxCount, o, true, rank, (n, send, recv) => {
      const options = { algorithm: o.algorithm };
      return {
        buffers: [send, recv],
        fill: () => clearRecvFillSend(send, recv, o.op, rank, size),
        run: () => comm.allgather(send, recv, options),
        wrong: () => wrongBlocks(recv, n, size, o, (r) => [r, 0]),
      };
    });
  },
};

const reduceScatter: PrimitiveSpec = {
  name: "reduce_scatter",
  reduces: true,
  rooted: false,
  inPlace: true,
  collective: "reduceScatter",
  ...BETWEEN_BLOCKS,
  work: (n) => ({ copy: 0, reduce: n - 1 }), // n − 1 sums for each element of the blocks
  prepare(comm, maxCount, o) {
    const { rank, size } = comm;
    return blockCase(comm, maxCount, o, false, rank, (n, send, recv) => {
      const options = { op: o.op, algorithm: o.algorithm };
      return {
        buffers: [send, recv],
        fill: () => clearRecvFillSend(send, recv, o.op, rank, size),
        run: () => comm.reduceScatter(send, recv, options),
        wrong: () => wrongReducedIn(recv, o.op, size, rank * n),
      };
    });
  },
};

const alltoall: PrimitiveSpec = {
  name: "alltoall",
  reduces: false,
  rooted: false,
  inPlace: false,
  collective: "alltoall",
  busFactor: (n) => (n - 1) / n,
  work: (n) => ({ copy: n - 1, reduce: 0 }),
  busFormula: "(n-1)/n",
  footprint: (count) => 2 * count,
  fit: multipleOfRanks,
  prepare(comm, maxCount, o) {
    const { rank, size } = comm;
    const sendBuf = alloc(comm, maxCount, o), recvBuf = alloc(comm, maxCount, o);
    return prepared(comm, o, [sendBuf, recvBuf], (count) => {
      const n = Math.floor(count / size);
      const send = head(sendBuf, n * size), recv = head(recvBuf, n * size);
      const options = { algorithm: o.algorithm };
      return {
        buffers: [send, recv],
        fill: () => clearRecvFillSend(send, recv, o.op, rank, size),
        run: () => comm.alltoall(send, recv, options),
        // Block q came from rank q: its send's block for this rank.
        wrong: () => wrongBlocks(recv, n, size, o, (q) => [q, rank * n]),
      };
    });
  },
};

const gather: PrimitiveSpec = {
  name: "gather",
  reduces: false,
  rooted: true,
  inPlace: true,
  collective: "gather",
  ...BETWEEN_BLOCKS,
  work: (n) => ({ copy: (n - 1) / n, reduce: 0 }), // the root writes the blocks but its own
  prepare(comm, maxCount, o) {
    const { rank, size } = comm;
    const isRoot = rank === o.root;
    return blockCase(comm, maxCount, o, true, isRoot ? rank : undefined, (n, send, recv) => {
      const options = { root: o.root, algorithm: o.algorithm };
      return {
        buffers: isRoot ? [send, recv] : [send],
        fill: () => clearRecvFillSend(send, recv, o.op, rank, size),
        run: () => comm.gather(send, isRoot ? recv : undefined, options),
        wrong: async () =>
          await wrongInputs(send, o.op, rank, size) +
          (isRoot ? await wrongBlocks(recv, n, size, o, (q) => [q, 0]) : 0),
      };
    });
  },
};

const scatter: PrimitiveSpec = {
  name: "scatter",
  reduces: false,
  rooted: true,
  inPlace: true,
  collective: "scatter",
  ...BETWEEN_BLOCKS,
  work: (n) => ({ copy: (n - 1) / n, reduce: 0 }), // each rank but the root writes its block
  prepare(comm, maxCount, o) {
    const { rank, size } = comm;
    const isRoot = rank === o.root;
    return blockCase(comm, maxCount, o, false, isRoot ? rank : undefined, (n, send, recv) => {
      const options = { root: o.root, algorithm: o.algorithm };
      return {
        buffers: isRoot ? [send, recv] : [recv],
        // The root's send holds its inputs, elements 0 … size × n − 1; rank r gets block r.
        fill: () => clearRecvFillSend(send, recv, o.op, rank, size),
        run: () => comm.scatter(isRoot ? send : undefined, recv, options),
        wrong: async () =>
          await wrongInputs(recv, o.op, o.root, size, rank * n) +
          (isRoot ? await wrongInputs(send, o.op, rank, size) : 0),
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
  alltoall,
  gather,
  scatter,
};
