/**
 * What the harness knows about each primitive it measures (nccl-tests' one file per collective):
 * the interfaces every case in this folder implements.
 * @module
 */

import type { Communicator, Dtype, MemoryKind, ReduceOp } from "../../core.ts";
import type { CollectiveName, Side } from "../../internal.ts";

/**
 * The primitives measured: the library's collectives by their own names, and the point-to-point
 * exchange. The CLI, the CSV and the tasks spell them in snake case (`reduce_scatter`).
 */
export type Primitive = CollectiveName | "sendrecv";

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
  /** Its name: the library's (the CLI and CSV spell it in snake case, `cliName`). */
  name: Primitive;
  /** The collective it measures (its algorithms are chosen by); none for point-to-point. */
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
