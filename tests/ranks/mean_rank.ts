// Rank program for tests/exact_mean_test.ts: i32 averages whose sums wrap i32 (and whose means
// round toward zero) through allreduce, reduce and reduce-scatter; returns what each gave.
import type { Communicator, MemoryKind } from "../../mod.ts";

/** Rank `rank`'s terms: near both ends of i32, and small ones whose means are not whole. */
export function terms(rank: number, length: number): Int32Array {
  const edges = [
    2 ** 30 - 6 + 2 * rank,
    -(2 ** 31) + rank,
    2 ** 31 - 1 - rank,
    -7 - rank,
    3 * rank,
  ];
  return Int32Array.from({ length }, (_, i) => edges[i % edges.length] - (i % 3));
}

export async function run(
  comm: Communicator,
  { memory, n }: { memory: MemoryKind; n: number },
): Promise<{ allreduce: number[]; reduce: number[]; reduceScatter: number[] }> {
  const whole = n * comm.size;
  const buf = (length: number) => comm.alloc(length, { dtype: "i32", memory });
  const read = async (b: ReturnType<typeof buf>) => {
    const out = new Int32Array(b.length);
    await b.read(out);
    return Array.from(out);
  };
  const a = buf(whole), r = buf(whole), s = buf(whole), block = buf(n);
  for (const b of [a, r, s]) await b.write(terms(comm.rank, whole));
  await comm.allreduce(a, { op: "avg" });
  await comm.reduce(r, { op: "avg", root: comm.size - 1 });
  await comm.reduceScatter(s, block, { op: "avg" });
  return { allreduce: await read(a), reduce: await read(r), reduceScatter: await read(block) };
}
