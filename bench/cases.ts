/**
 * Every primitive described once for the harness and the tests (nccl-tests style): one case a
 * file in cases/ — which buffers it needs, how it is filled and checked with exact inputs
 * (exact_inputs.ts), its bus-bandwidth factor — listed here by the library's names.
 * @module
 */

import { snakeCase } from "../internal.ts";
import { ALLGATHER, ALLGATHERV } from "./cases/allgather.ts";
import { ALLREDUCE } from "./cases/allreduce.ts";
import { ALLTOALL } from "./cases/alltoall.ts";
import { ALLTOALLV } from "./cases/alltoallv.ts";
import { BCAST } from "./cases/bcast.ts";
import { BIBW, BW, MBW_MR } from "./cases/bw.ts";
import { GATHER } from "./cases/gather.ts";
import { GATHERV } from "./cases/gatherv.ts";
import { LATENCY } from "./cases/latency.ts";
import { IN_PAIRS } from "./cases/_pairs.ts";
import { IALLREDUCE, IALLTOALL, IBCAST } from "./cases/overlap.ts";
import { REDUCE } from "./cases/reduce.ts";
import { REDUCE_SCATTER, REDUCE_SCATTERV } from "./cases/reduce_scatter.ts";
import { SCATTER } from "./cases/scatter.ts";
import { SCATTERV } from "./cases/scatterv.ts";
import { SENDRECV } from "./cases/sendrecv.ts";
import type { Primitive, PrimitiveSpec } from "./cases/spec.ts";

export { DEFAULT_WINDOW, MAX_WINDOW } from "./cases/spec.ts";
export type {
  CaseOptions,
  Flow,
  NonBlockingName,
  PointToPointName,
  PreparedCase,
  Primitive,
  PrimitiveSpec,
  SizedCase,
  Traffic,
} from "./cases/spec.ts";

/** Every primitive's case, by the library's name, in the order tasks and sweeps list them. */
export const PRIMITIVES: Readonly<Record<Primitive, PrimitiveSpec>> = {
  sendrecv: SENDRECV,
  bcast: BCAST,
  reduce: REDUCE,
  allreduce: ALLREDUCE,
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
  latency: LATENCY,
  bw: BW,
  bibw: BIBW,
  mbwMr: MBW_MR,
  iallreduce: IALLREDUCE,
  ibcast: IBCAST,
  ialltoall: IALLTOALL,
};

/** Every primitive, in order. */
export const PRIMITIVE_LIST: readonly Primitive[] = Object.keys(PRIMITIVES) as Primitive[];

/** How the CLI, its tasks and the CSV spell a primitive (`reduceScatter`: `reduce_scatter`). */
export function cliName(primitive: Primitive): string {
  return snakeCase(primitive);
}

/** The primitive the CLI spells `name` (or the library does), if there is one. */
export function primitiveNamed(name: string): Primitive | undefined {
  return PRIMITIVE_LIST.find((p) => p === name || cliName(p) === name);
}

/** The primitives that `take` a flag, as the CLI spells them (for "it applies to …"). */
export function primitivesWith(take: (primitive: Primitive) => unknown): string {
  return PRIMITIVE_LIST.filter(take).map(cliName).join(", ");
}

/** Whether `primitive` runs on pairs of ranks (`--pairs`: the point-to-point tests but sendrecv). */
export function pairwise(primitive: Primitive): boolean {
  return PRIMITIVES[primitive].ranks === IN_PAIRS;
}
