/**
 * Call stamps: what a message or a shared-memory arrival belongs to (collective, op, dtype, count,
 * root, algorithm), packed in one safe integer that transports carry without reading it. The
 * communicator compares every peer's stamp with its own call, so ranks that disagree on any of
 * them fail with a `MismatchError` instead of completing with different data.
 * @module
 */

import {
  COLLECTIVE_LIST,
  type CollectiveName,
  COLLECTIVES,
} from "../collectives/collective_table.ts";
import { type Dtype, DTYPES, REDUCE_OPS, type ReduceOp } from "../types.ts";

/** What a rank is doing: a point-to-point message or one of the collectives. */
export type CallKind = "p2p" | CollectiveName | "barrier";
/** The codes of the calls that are not collectives (each collective states its own). */
const OTHER_CODES = { p2p: 0, barrier: 6 } as const;
/** Kinds by code: a collective's spec states its code, so the codes never change. */
const KINDS: readonly CallKind[] = (() => {
  const kinds: CallKind[] = [];
  for (const [kind, code] of Object.entries(OTHER_CODES)) kinds[code] = kind as CallKind;
  for (const c of COLLECTIVE_LIST) {
    if (kinds[c.code] !== undefined) throw new Error(`Two calls have stamp code ${c.code}`);
    kinds[c.code] = c.name;
  }
  return kinds;
})();

/** The fields of a stamp. */
export interface CallShape {
  kind: CallKind;
  dtype: Dtype;
  /** Elements of the call's main buffer (0 for barrier). */
  count: number;
  /** Reduce op; `sum` where the call has none. */
  op: ReduceOp;
  /** Root rank; 0 where the call has none. */
  root: number;
  /** Index of the algorithm in the collective's registry table; 0 where there is none. */
  algorithm: number;
  /** Whether the call sums reproducibly (kernels/reproducible.ts). */
  reproducible: boolean;
}

// Low 23 bits: kind (4), op and dtype together (5: op × 5 + dtype, 25 of 32 codes), root (10),
// algorithm (4); above them the count, so that 2^29 half-precision elements stay below 2^53.
// Every stamp adds 2^31 (a multiple of 2^23): stamps are never the 32-bit integers V8 compiles
// for, so the first call of 256 elements or more does not deoptimize all the code stamps flow
// through (docs/measuring.md, "Stamps above 2^31").
// A reproducible call (of at most 2^27 elements, at least one) adds 2^52: above any other stamp.
const LOW = 2 ** 23, FLOOR = 2 ** 31, REPRODUCIBLE = 2 ** 52;
const codes = <T extends string>(list: readonly T[]) =>
  Object.fromEntries(list.map((v, i) => [v, i])) as Record<T, number>;
const KIND_CODE = codes(KINDS), OP_CODE = codes(REDUCE_OPS), DTYPE_CODE = codes(DTYPES);
const D = DTYPES.length;

/**
 * Packs a call into a stamp (a safe integer: counts stay at or below 2^29). Positional and
 * allocation-free: every call of every rank computes one.
 */
export function callStamp(
  kind: CallKind,
  dtype: Dtype,
  count: number,
  op: ReduceOp,
  root: number,
  algorithm: number,
  reproducible = false,
): number {
  return FLOOR + (reproducible ? REPRODUCIBLE : 0) + count * LOW +
    (KIND_CODE[kind] | (OP_CODE[op] * D + DTYPE_CODE[dtype]) << 4 | root << 9 | algorithm << 19);
}

/** {@linkcode callStamp} of a shape. */
export function stampOf(s: CallShape): number {
  return callStamp(s.kind, s.dtype, s.count, s.op, s.root, s.algorithm, s.reproducible);
}

/** Unpacks a stamp. */
export function shapeOf(stamp: number): CallShape {
  stamp -= FLOOR;
  const reproducible = stamp >= REPRODUCIBLE + LOW;
  if (reproducible) stamp -= REPRODUCIBLE;
  const low = stamp % LOW;
  return {
    kind: KINDS[low & 15] ?? "p2p",
    op: REDUCE_OPS[Math.floor(((low >> 4) & 31) / D)] ?? "sum",
    dtype: DTYPES[((low >> 4) & 31) % D] ?? "f32",
    root: (low >> 9) & 1023,
    algorithm: (low >> 19) & 15,
    count: Math.floor(stamp / LOW),
    reproducible,
  };
}

/**
 * A stamp as text, e.g. `allreduce(sum, 1000 × f32, ring)`; `algorithmName` turns an algorithm
 * index of a collective into its name.
 */
export function describeStamp(
  stamp: number,
  algorithmName: (kind: CallKind, index: number) => string | undefined,
): string {
  const s = shapeOf(stamp);
  if (s.kind === "barrier") return "barrier";
  if (s.kind === "p2p") return `a point-to-point message of ${s.dtype}`;
  const spec = COLLECTIVES[s.kind];
  const parts = [
    ...(spec.reduces ? [s.op] : []),
    ...(s.reproducible ? ["reproducible"] : []),
    `${s.count} × ${s.dtype}`,
    ...(spec.rooted ? [`root ${s.root}`] : []),
    algorithmName(s.kind, s.algorithm) ?? `algorithm ${s.algorithm}`,
  ];
  return `${s.kind}(${parts.join(", ")})`;
}
