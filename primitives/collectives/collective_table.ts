/**
 * The collectives' table (NCCL's list of collectives, nccl-tests' one file each): every
 * collective's spec (spec.ts) in order, the vocabulary every layer types against
 * (`CollectiveName`), each one's algorithm signature (`Signatures`), and what reads a spec by
 * name. A new collective is its file and its lines here (docs/design.md, "A new collective").
 * @module
 */

import type { KernelOp, TypedArray } from "../types.ts";
import { ALLGATHER, type AllgatherRun } from "./allgather.ts";
import { ALLGATHERV, type AllgathervRun } from "./allgatherv.ts";
import { ALLREDUCE, type AllreduceRun } from "./allreduce.ts";
import { ALLTOALL, type AlltoallRun } from "./alltoall.ts";
import { ALLTOALLV, type AlltoallvRun } from "./alltoallv.ts";
import { BCAST, type BcastRun } from "./bcast.ts";
import type { CollectiveContext } from "./context.ts";
import { GATHER, type GatherRun } from "./gather.ts";
import { GATHERV, type GathervRun } from "./gatherv.ts";
import { REDUCE, type ReduceRun } from "./reduce.ts";
import { REDUCE_SCATTER, type ReduceScatterRun } from "./reduce_scatter.ts";
import { REDUCE_SCATTERV, type ReduceScattervRun } from "./reduce_scatterv.ts";
import { SCATTER, type ScatterRun } from "./scatter.ts";
import { SCATTERV, type ScattervRun } from "./scatterv.ts";
import type { BoundRun, CollectiveSpec, Layout, UniformRun } from "./spec.ts";

/** Every collective, in order. */
export const COLLECTIVE_LIST = [
  ALLREDUCE,
  BCAST,
  REDUCE,
  ALLGATHER,
  REDUCE_SCATTER,
  ALLTOALL,
  GATHER,
  SCATTER,
  ALLTOALLV,
  ALLGATHERV,
  GATHERV,
  SCATTERV,
  REDUCE_SCATTERV,
] as const;

/** A collective's name: its method on the Communicator. */
export type CollectiveName = (typeof COLLECTIVE_LIST)[number]["name"];

/** The collectives that take a reduce op. */
export type ReducingName = Extract<(typeof COLLECTIVE_LIST)[number], { reduces: true }>["name"];

/** Each collective's algorithm signature over operands of type `B`. */
export interface Signatures<B> {
  /** {@linkcode AllreduceRun}. */
  allreduce: AllreduceRun<B>;
  /** {@linkcode BcastRun}. */
  bcast: BcastRun<B>;
  /** {@linkcode ReduceRun}. */
  reduce: ReduceRun<B>;
  /** {@linkcode AllgatherRun}. */
  allgather: AllgatherRun<B>;
  /** {@linkcode ReduceScatterRun}. */
  reduceScatter: ReduceScatterRun<B>;
  /** {@linkcode AlltoallRun}. */
  alltoall: AlltoallRun<B>;
  /** {@linkcode GatherRun}. */
  gather: GatherRun<B>;
  /** {@linkcode ScatterRun}. */
  scatter: ScatterRun<B>;
  /** {@linkcode AlltoallvRun}. */
  alltoallv: AlltoallvRun<B>;
  /** {@linkcode AllgathervRun}. */
  allgatherv: AllgathervRun<B>;
  /** {@linkcode GathervRun}. */
  gatherv: GathervRun<B>;
  /** {@linkcode ScattervRun}. */
  scatterv: ScattervRun<B>;
  /** {@linkcode ReduceScattervRun}. */
  reduceScatterv: ReduceScattervRun<B>;
}

/** Each collective's spec, by name (the type checker holds it to the list and `Signatures`). */
export const COLLECTIVES: { readonly [C in CollectiveName]: Spec<C> } = {
  allreduce: ALLREDUCE,
  bcast: BCAST,
  reduce: REDUCE,
  allgather: ALLGATHER,
  reduceScatter: REDUCE_SCATTER,
  alltoall: ALLTOALL,
  gather: GATHER,
  scatter: SCATTER,
  alltoallv: ALLTOALLV,
  allgatherv: ALLGATHERV,
  gatherv: GATHERV,
  scatterv: SCATTERV,
  reduceScatterv: REDUCE_SCATTERV,
};

/** A spec as the table holds it: its bind and unbind typed by its collective's signature. */
export type Spec<C extends CollectiveName> = Omit<CollectiveSpec<C>, "bind" | "unbind"> & {
  bind<B>(run: Signatures<B>[C], op: KernelOp, root: number, layout: Layout): BoundRun<B>;
  unbind<B>(run: UniformRun<B>): Signatures<B>[C];
};

/** Every collective's name, in order. */
export const COLLECTIVE_NAMES: readonly CollectiveName[] = COLLECTIVE_LIST.map((c) => c.name);

/** Whether `name` is a collective's. */
export function isCollective(name: string): name is CollectiveName {
  return Object.hasOwn(COLLECTIVES, name);
}

/** How the CLI and the CSV spell a collective: in snake case (`reduceScatter`: `reduce_scatter`). */
export function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/**
 * The host algorithm `auto` picks for `collective` on `bytes` over `ctx`'s group, as on a
 * one-level group: what staging runs on the host and the hierarchical algorithms over channels.
 */
export function hostAlgorithm<C extends CollectiveName>(
  ctx: CollectiveContext,
  collective: C,
  bytes: number,
): Signatures<TypedArray>[C] {
  return ctx.pickHost(ctx, collective, bytes) as Signatures<TypedArray>[C];
}
