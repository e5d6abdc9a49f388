// The correctness matrix every transport runs: primitives × algorithms × counts × ops × dtypes ×
// memory kinds, with exact integer-valued inputs (see bench/exact_inputs.ts).
import type { CheckCase } from "./ranks/check_rank.ts";
import { algorithmsFor } from "../primitives/auto.ts";
import type { CollectiveName } from "../primitives/collectives/collective_table.ts";
import { TRANSPORTS } from "../deno/transport_table.ts";
import { type Primitive, PRIMITIVES } from "../bench/cases.ts";
import { sideOfMemory } from "../primitives/transports/transport.ts";
import type { Dtype, MemoryKind, ReduceOp } from "../mod.ts";
import type { TransportName } from "../deno/transport_table.ts";

const COUNTS = [0, 1, 4, 1000, 65537];
const OPS: ReduceOp[] = ["sum", "prod", "max", "min", "avg"];
const HALF_OPS: ReduceOp[] = ["sum", "avg"];

/**
 * Every case of `transport` at `size` ranks on `memory` (default: `shared` where the transport
 * carries it, else its best kind): every algorithm for that memory's side (the hierarchical ones
 * too for processes of `threads` ranks), counts, ops and dtypes (device memory holds no f64),
 * plus the in-place forms, and `host` memory where the side is the host. Beyond 4 ranks, where
 * what is new is the algorithms' shapes (non-powers of two, more steps), not their ops or dtypes
 * (each op and dtype meets every algorithm at 1 … 4 ranks), every op runs at one count and every
 * dtype with sum: the same algorithms and counts, a third of the cases.
 */
/** Whether the matrix runs `primitive` (see {@linkcode matrix}). */
export function inMatrix(primitive: Primitive): boolean {
  const spec = PRIMITIVES[primitive];
  if (spec.flow || spec.overlap) return primitive === "sendrecv";
  return !["alltoallv", "allgatherv", "gatherv", "scatterv"].includes(primitive);
}

export function matrix(
  transport: TransportName,
  size: number,
  memory: MemoryKind = TRANSPORTS[transport].memory.includes("shared")
    ? "shared"
    : TRANSPORTS[transport].bestMemory,
  threads = 1,
): CheckCase[] {
  const facts = TRANSPORTS[transport];
  const side = sideOfMemory(facts, memory);
  const device = side === "device" || memory === "managed";
  const cases: CheckCase[] = [];
  const add = (c: Omit<CheckCase, "root"> & { root?: number }) =>
    cases.push({ root: size - 1, ...c });
  for (const primitive of Object.keys(PRIMITIVES) as Primitive[]) {
    // The point-to-point, overlap and per-rank-count tests have files of their own
    // (point_to_point_test.ts, nonblocking_test.ts, v_collectives_test.ts): their cases are sends
    // and collectives this matrix already runs; only reduceScatterv's reductions are its own.
    if (!inMatrix(primitive)) continue;
    const collective = PRIMITIVES[primitive].collective;
    const runnable = collective
      ? algorithmsFor(collective as CollectiveName, { transport: facts, side, threads })
      : [];
    // A collective with no algorithm here (the v collectives' device buffers on gpu) is refused.
    if (collective && runnable.length === 0) continue;
    const algorithms = ["auto", ...runnable];
    const reduces = PRIMITIVES[primitive].reduces;
    const few = size <= 4;
    for (const algorithm of algorithms) {
      for (const count of COUNTS) {
        // Every op on small counts (beyond 4 ranks on one); the large odd count with sum keeps
        // the suite quick.
        const everyOp = reduces && count <= 1000 && (few || count === 1000);
        for (const op of everyOp ? OPS : ["sum" as const]) {
          add({ primitive, algorithm, count, op, dtype: "f32", memory, repeat: device ? 1 : 2 });
        }
      }
      for (
        const dtype of (device ? ["i32", "f16", "bf16"] : ["f64", "i32", "f16", "bf16"]) as Dtype[]
      ) {
        // Half precision: sum and avg (its division); the kernel tests cover every op.
        const half = dtype === "f16" || dtype === "bf16";
        const ops = !reduces || !few ? ["sum" as const] : half ? HALF_OPS : OPS;
        for (const op of ops) add({ primitive, algorithm, count: 1001, op, dtype, memory });
      }
      if (PRIMITIVES[primitive].inPlace) {
        for (const count of [1, 65537]) {
          add({ primitive, algorithm, count, op: "sum", dtype: "f32", memory, inPlace: true });
        }
      }
      if (side === "host" && memory !== "host") {
        for (const count of [3, 65537]) {
          add({ primitive, algorithm, count, op: "sum", dtype: "f32", memory: "host", root: 0 });
        }
      }
    }
  }
  return cases;
}

/** One line per case that some rank got wrong. */
export function failures(cases: CheckCase[], wrong: number[][]): string[] {
  return cases.flatMap((c, i) => {
    const perRank = wrong.map((w) => w[i]);
    return perRank.some((w) => w !== 0)
      ? [
        `${c.primitive}/${c.algorithm}${
          c.inPlace ? " in place" : ""
        } ${c.dtype} ${c.memory} ${c.op} count=${c.count}: wrong=${perRank}`,
      ]
      : [];
  });
}
