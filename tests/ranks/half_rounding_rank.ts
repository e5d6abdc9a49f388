// Rank program for the device's rounding test: an f16 and a bf16 allreduce on `gpu` at 3 and 4
// logical ranks, through gpu_direct, must round at the same steps as the host — after each rank's
// term, in rank order — on words off the grid (including 0x3555 + 0xbc00 + 0x0001 in f16, which
// a single rounding at the end gets wrong). Returns the words that differ, per dtype.
import type { Communicator } from "../../mod.ts";
import { reduceReference } from "../../kernels/reduce_reference.ts";
import { DTYPE_INFO } from "../../primitives/types.ts";
import type { TypedArray } from "../../primitives/types.ts";

/** Rank `r`'s word `i`: finite halves of many magnitudes, and the known case at index 0. */
function word(dtype: "f16" | "bf16", r: number, i: number): number {
  if (i === 0 && dtype === "f16") return [0x3555, 0xbc00, 0x0001, 0x0001][r];
  const w = (i * 7919 + r * 104729 + 12345) % 0x7c00;
  return dtype === "f16" ? w | ((i + r) % 3 === 0 ? 0x8000 : 0) : (w % 0x7f00) + 0x0100;
}

export async function run(comm: Communicator): Promise<Record<string, number>> {
  const n = 4096 + 3; // eight at a time, then a tail word by word
  const wrong: Record<string, number> = {};
  for (const dtype of ["f16", "bf16"] as const) {
    const words = (r: number) => Uint16Array.from({ length: n }, (_, i) => word(dtype, r, i));
    const view = (w: Uint16Array) =>
      (dtype === "f16" ? new Float16Array(w.buffer) : w) as TypedArray;
    const buf = comm.alloc(n, { dtype, memory: "gpu" });
    await buf.write(view(words(comm.rank)));
    await comm.allreduce(buf, { algorithm: "gpu_direct" });
    const got = new DTYPE_INFO[dtype].array(n) as TypedArray;
    await buf.read(got);
    // The host's order: rank 0's term, then each rank's added and rounded in turn.
    const expected = view(words(0));
    for (let r = 1; r < comm.size; r++) reduceReference("sum", expected, expected, view(words(r)));
    const asWords = (v: TypedArray) => new Uint16Array(v.buffer, v.byteOffset, n);
    const [a, b] = [asWords(got), asWords(expected)];
    wrong[dtype] = a.filter((w, i) => w !== b[i]).length;
  }
  return wrong;
}
