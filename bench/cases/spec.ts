/**
 * What the harness knows about each primitive it measures (nccl-tests' one file per collective):
 * the interfaces every case in this folder implements.
 * @module
 */

import type { Communicator, Dtype, MemoryKind, ReduceOp } from "../../core.ts";
import type { CollectiveName, Side } from "../../internal.ts";

/**
 * The point-to-point measurements, as OSU's tests: the exchange (nccl-tests' sendrecv), a
 * ping-pong (`latency`, osu_latency and osu_multi_lat), a window of sends one way (`bw`) or both
 * (`bibw`), and a window per pair (`mbwMr`, osu_mbw_mr).
 */
export type PointToPointName = "sendrecv" | "latency" | "bw" | "bibw" | "mbwMr";

/** The overlap measurements, as OSU's non-blocking tests: a collective issued, computation, await. */
export type NonBlockingName = "iallreduce" | "ibcast" | "ialltoall";

/**
 * The primitives measured: the library's collectives by their own names, the point-to-point
 * ones and the overlap ones. The CLI, the CSV and the tasks spell them in snake case
 * (`reduce_scatter`, `mbw_mr`).
 */
export type Primitive = CollectiveName | PointToPointName | NonBlockingName;

/** Messages in a window of `bw`, `bibw` and `mbw_mr` unless `--window` says (OSU's `-W`). */
export const DEFAULT_WINDOW = 64;

/** The most messages a window may hold. */
export const MAX_WINDOW = 4096;

/** Options one run of a primitive takes. */
export interface CaseOptions {
  /** Element type (`--dtype`). */
  dtype: Dtype;
  /** Memory kind of the buffers (`--memory`). */
  memory: MemoryKind;
  /** Reduce op (`--op`); ignored by primitives without one. */
  op: ReduceOp;
  /** Sums reproducibly (`--reproducible`): allreduce, reduce and the reduce-scatters' sum and avg. */
  reproducible?: boolean;
  /** Root rank (`--root`); ignored by primitives without one. */
  root: number;
  /** An algorithm's name, or `auto`. */
  algorithm: string;
  /** Managed memory: touch the buffers on this side before every operation (OMB's `-d managed`). */
  touch?: Side;
  /** Messages per window of the streaming tests (OSU's `-W`). @default {DEFAULT_WINDOW} */
  window?: number;
  /** alltoallv: who sends how much to whom; balanced when absent. */
  traffic?: Traffic;
}

/**
 * An alltoallv's traffic: `weights[i][j]` is how much of the total rank i sends rank j, scaled at
 * each size so the total is the balanced run's (size × count elements) — a matrix file's counts
 * as given at the size they add up to, or a generator's (`--skew zipf:1.2`).
 */
export interface Traffic {
  /** Where it came from, as the header says it (`matrix moe.csv`, `zipf:1.2 seed 0`). */
  label: string;
  /** `weights[i][j]`: rank i to rank j, in any unit (only their shares count). */
  weights: number[][];
}

/**
 * How the messages of one operation of a point-to-point test add up (OSU's figures): `messages`
 * follow one another on each pair (a ping-pong's two, a window's sends), and `streams` flow at
 * once (the pairs, both ways of each for bibw). A row's time is per message; its bandwidth is
 * every stream's together, and its message rate streams per message time.
 */
export interface Flow {
  /** Messages one after another on each pair per operation. */
  messages: number;
  /** Streams of messages at once across the group. */
  streams: number;
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
  /** An overlap test's case with `us` µs of computation between issuing the call and awaiting it. */
  withCompute?(us: number): SizedCase;
  /**
   * A skewed alltoallv's balanced run of the same total: timed beside it, so the row says what
   * the skew cost.
   */
  balanced?: SizedCase;
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
  /**
   * Elements this primitive holds per rank for a `count`-element case (for memory checks); a
   * window holds `window` messages.
   */
  footprint(count: number, ranks: number, o: Pick<CaseOptions, "window" | "traffic">): number;
  /**
   * Elements of the largest buffer a rank allocates for a `count`-element case, where it is more
   * than `count` (a skewed alltoallv's busiest rank); at most 1 GiB, as every buffer.
   * @default {count}
   */
  largestBuffer?(count: number, ranks: number, o: Pick<CaseOptions, "traffic">): number;
  /**
   * Largest count not above `count` the primitive can run on `ranks` (allgather and reduce-scatter
   * need a multiple of the rank count).
   */
  fit(count: number, ranks: number): number;
  /**
   * The rank counts it runs on, and how to say so (`runs on 2 ranks`); every count when absent.
   */
  ranks?: { accepts(ranks: number): boolean; rule: string };
  /** It takes a traffic matrix (`--matrix`, `--skew`): its rows say the busiest rank's bytes. */
  traffic?: boolean;
  /** It is an overlap test: its cases have {@linkcode SizedCase.withCompute}. */
  overlap?: boolean;
  /** It streams windows of messages (`--window`, OSU's `-W`). */
  windowed?: boolean;
  /** A point-to-point test's messages per operation; one of each when absent. */
  flow?(ranks: number, window: number): Flow;
  /** Allocates buffers for up to `maxCount` elements (the larger buffer, as in nccl-tests). */
  prepare(comm: Communicator, maxCount: number, options: CaseOptions): PreparedCase;
}
