/**
 * What a collective is to the library, in one place (nccl-tests keeps each collective in one
 * file): `collectives/<collective>.ts` exports its spec — its name, its code in call stamps, its
 * argument check, how its algorithms take a call's operands (bind, and back), how device buffers
 * cross to the host for it (staging), rooted or not, reducing or not — and the table
 * (collective_table.ts) lists the specs; stamps, the call's binding, staging and the registry read
 * it (docs/design.md, "A new collective").
 * @module
 */

import type { BufferLike, CommBuffer } from "../memory/comm_buffer.ts";
import type { KernelOp, ReduceOp } from "../types.ts";
import type { CollectiveContext, Completion } from "./context.ts";
import type { ReduceOptions, RootOptions } from "./options.ts";
import type { Counts } from "./_counts.ts";

/** A call's in-place form: `a` is `b` itself, or block of `b` (`whose` block: whose rank's). */
export interface InPlaceForm {
  /** The operand that is (part of) the other, as the message names it. */
  a: string;
  /** The operand it is part of. */
  b: string;
  /** Whose block of `b` it is (none: `a` is `b` itself). */
  whose?: string;
}

/** The in-place forms of the calls. */
export const IN_PLACE: Readonly<
  Record<"out" | "ownSend" | "ownRecv" | "rootSend" | "rootRecv", InPlaceForm>
> = {
  out: { a: "out", b: "the input" },
  ownSend: { a: "send", b: "recv", whose: "this rank's" },
  ownRecv: { a: "recv", b: "send", whose: "this rank's" },
  rootSend: { a: "send", b: "recv", whose: "the root's" },
  rootRecv: { a: "recv", b: "send", whose: "the root's" },
};

/**
 * The checks every collective's arguments go through (the communicator's, call_arguments.ts):
 * each wrong argument is a one-line TypeError or RangeError thrown before anything is sent.
 */
export interface ArgumentChecks {
  /** This rank. */
  readonly rank: number;
  /** Ranks in the group. */
  readonly size: number;
  /** `buf` as a buffer this rank may use in a call that does `what`. */
  buffer(buf: BufferLike, what: string): CommBuffer;
  /** The checked `out` buffer for `input`, or `input` itself when there is none. */
  output(input: CommBuffer, out: BufferLike | undefined, what: string): CommBuffer;
  /**
   * Operands apart, or `a` exactly block `block` of `b` (from element `at`, by default block ×
   * `a`'s length) where the call has an in-place `form`.
   */
  apart(
    a: CommBuffer,
    b: CommBuffer,
    what: string,
    block?: number,
    form?: InPlaceForm,
    at?: number,
  ): void;
  /** Two buffers of one call: the same dtype, and lengths that are `ok` by `rule`. */
  pair(a: CommBuffer, b: CommBuffer, ok: boolean, what: string, rule: string): void;
  /** A root of the group. */
  root(root: number, verb: string): number;
  /** A reduce op. */
  op(op: ReduceOp): ReduceOp;
  /**
   * Whether a call with `op` on `count` elements (of one term) of `buffer`'s dtype sums
   * reproducibly, as `asked`: where sums are exact anyway (max, min, i32) the plain call is.
   */
  reproducible(
    asked: boolean | undefined,
    op: ReduceOp,
    buffer: CommBuffer,
    count: number,
  ): boolean;
}

/**
 * A call on host buffers to keep (a loop of small collectives reruns it without its checks): a
 * collective whose small calls run in loops, its buffers and the caller's options (those a repeat
 * must match).
 */
export interface Keep {
  /** The collective. */
  kind:
    | "bcast"
    | "allreduce"
    | "reduce"
    | "allgather"
    | "reduceScatter"
    | "alltoall"
    | "alltoallv"
    | "gather"
    | "scatter"
    | "allgatherv"
    | "reduceScatterv"
    | "gatherv"
    | "scatterv";
  /** The buffer every rank gives the call (`send` where it takes two; scatter's `recv`). */
  buf: BufferLike;
  /** The other buffer of a collective that takes two (`recv`; scatter's `send`), if given. */
  recv?: BufferLike;
  /** The caller's options; a call with per-rank counts, its counts and displacements too. */
  options: ReduceOptions & RootOptions & {
    sendCounts?: Counts;
    sendDispls?: Counts;
    recvCounts?: Counts;
    recvDispls?: Counts;
  };
}

/** A collective call whose arguments are checked: the one form every collective's call takes. */
export interface CheckedCall<C extends string = string> {
  /** The collective. */
  collective: C;
  /** Input and output, each with whether the call writes it (a bcast's buffer twice). */
  buffers: [[CommBuffer, boolean], [CommBuffer, boolean]];
  /** The buffer whose dtype and length the stamp carries: equal on every rank. */
  block: CommBuffer;
  /** Bytes `auto` picks by. @default {the block's} */
  bytes?: number;
  /** The reduce op, where it takes one. */
  op?: ReduceOp;
  /** The root, where it takes one. */
  root?: number;
  /** The algorithm asked for (`auto` or none: auto's pick). */
  algorithm?: string;
  /** A call on host buffers to keep (a loop of small collectives). */
  keep?: Keep;
  /** Whether the call sums reproducibly (communicator/reproducible.ts). @default {false} */
  reproducible?: boolean;
  /** With `avg`, whether this rank divides its output (a reduce's root only). @default {true} */
  divides?: boolean;
  /** The blocks of a call with per-rank counts. @default {NO_LAYOUT} */
  layout?: Layout;
  /**
   * The count its stamp carries where it is not the block's length: a figure every rank knows
   * alike (the total of counts all ranks are given), or 0 where each knows only its own.
   */
  stampCount?: number;
}

/** A collective's algorithm bound to a call's op and root: it runs on input `a` and output `b`. */
export type BoundRun<B> = (ctx: CollectiveContext, a: B, b: B) => Completion;

/**
 * Where each rank's block lies in the operands of a call with per-rank counts (the v
 * collectives): block r of `send` is `sendCounts[r]` elements from `sendDispls[r]`, and so for
 * `recv`. The lists a call does not take are empty.
 */
export interface Layout {
  /** Elements of each rank's block of `send`. */
  readonly sendCounts: readonly number[];
  /** Where each rank's block of `send` starts. */
  readonly sendDispls: readonly number[];
  /** Elements of each rank's block of `recv`. */
  readonly recvCounts: readonly number[];
  /** Where each rank's block of `recv` starts. */
  readonly recvDispls: readonly number[];
}

/** The layout of a call with equal blocks (every collective but the v ones). */
export const NO_LAYOUT: Layout = { sendCounts: [], sendDispls: [], recvCounts: [], recvDispls: [] };

/**
 * Every collective's call in one form: input, output (a bcast's buffer twice), op, root, and
 * the blocks of a call with per-rank counts.
 */
export type UniformRun<B> = (
  ctx: CollectiveContext,
  a: B,
  b: B,
  op: KernelOp,
  root: number,
  layout: Layout,
) => Completion;

/**
 * How a collective crosses to the host when its buffers are on a device and the transport only
 * moves host bytes (collectives/staging.ts): which operand is `size` blocks of a segment's
 * elements (the other holds one block), whether the host call works on one buffer (the input,
 * in place), which ranks download the input and upload the output, and which operand's bytes
 * pick the host algorithm.
 */
export interface StagingShape {
  /** The operand of `size` blocks (none: both hold one). */
  blocked?: "send" | "recv";
  /** The host call works on one buffer, the input. */
  inPlace?: boolean;
  /** Whether a rank (the root, or not) downloads the input. @default {true} */
  reads?(isRoot: boolean): boolean;
  /** Whether a rank (the root, or not) uploads the output. @default {true} */
  writes?(isRoot: boolean): boolean;
  /** The operand whose bytes pick the host algorithm (equal on every rank). */
  pickBy: "send" | "recv";
  /** Whether segments pay (`pipelined`): not where whole blocks go to and from every rank. */
  pipelines: boolean;
}

/**
 * One collective's spec. `bind` and `unbind` are each other's inverse between its algorithms'
 * own signature (`Signatures`, collective_table.ts) and the uniform one; `check` turns the public
 * method's arguments into a checked call.
 */
export interface CollectiveSpec<N extends string = string> {
  /** Its name: the Communicator's method (the CLI and CSV spell it in snake case). */
  readonly name: N;
  /** Its code in call stamps (communicator/stamp.ts): fixed, a new collective takes the next. */
  readonly code: number;
  /** It takes a root. */
  readonly rooted: boolean;
  /** It takes a reduce op. */
  readonly reduces: boolean;
  /** How device buffers cross to the host for it. */
  readonly staging: StagingShape;
  /** The public method's arguments, checked (`args`: the communicator's checks). */
  check(args: ArgumentChecks, ...call: never[]): CheckedCall<N>;
  /**
   * Its algorithm `run` as a call on operands `a` and `b`, with the call's op, root and (the v
   * collectives) layout.
   */
  bind<B>(run: never, op: KernelOp, root: number, layout: Layout): BoundRun<B>;
  /** A run of the uniform form as one of its algorithms' own signature. */
  unbind<B>(run: UniformRun<B>): unknown;
}
