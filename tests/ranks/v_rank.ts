// Rank program for the collectives with per-rank counts: runs each case (a collective, a count
// pattern, an algorithm, a memory kind, in place or not) against values computed here, and
// returns what differed, so the test sees every failure at once.
import type { Communicator, MemoryKind } from "../../core.ts";

/** How many elements rank i sends rank j (alltoallv), or rank r holds (the others). */
export type Pattern = "zeros" | "one" | "primes" | "equal";
export interface VCase {
  collective: "alltoallv" | "allgatherv" | "gatherv" | "scatterv" | "reduceScatterv";
  pattern: Pattern;
  algorithm: string;
  memory: MemoryKind;
  inPlace?: boolean;
  root?: number;
}

const PRIMES = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53];

/** Elements from rank i to rank j (alltoallv). */
export function pairCount(p: Pattern, i: number, j: number, size: number): number {
  return p === "zeros"
    ? (i + 2 * j) % 3
    : p === "one"
    ? (j === size - 1 ? 9 : 0)
    : p === "primes"
    ? PRIMES[(i * size + j) % PRIMES.length]
    : 4;
}

/** Elements of rank r's block (the others). */
export function rankCount(p: Pattern, r: number, size: number): number {
  return p === "zeros"
    ? r % 3
    : p === "one"
    ? (r === size - 1 ? 9 : 0)
    : p === "primes"
    ? PRIMES[r]
    : 4;
}

/** Element k of rank i's block for rank j: exact in f32, unique per (i, j, k). */
const value = (i: number, j: number, k: number) => 1000 * i + 100 * j + k + 1;
const sum = (list: number[]) => list.reduce((s, c) => s + c, 0);
const packed = (counts: number[]) => counts.map((_, r) => sum(counts.slice(0, r)));

export async function run(comm: Communicator, cases: VCase[]): Promise<string[]> {
  const { rank, size } = comm;
  const problems: string[] = [];
  for (const c of cases) {
    const what = JSON.stringify(c);
    const buffer = async (values: number[]) => {
      const buf = comm.alloc(Math.max(values.length, 0), { memory: c.memory });
      await buf.write(Float32Array.from(values));
      return buf;
    };
    const read = async (buf: { length: number; read(v: Float32Array): Promise<void> }) => {
      const out = new Float32Array(buf.length);
      await buf.read(out);
      return Array.from(out);
    };
    let got: number[], want: number[];
    const root = c.root ?? 0;
    if (c.collective === "alltoallv") {
      const sendCounts = Array.from(
        { length: size },
        (_, j) => pairCount(c.pattern, rank, j, size),
      );
      const recvCounts = Array.from(
        { length: size },
        (_, i) => pairCount(c.pattern, i, rank, size),
      );
      want = recvCounts.flatMap((n, i) => Array.from({ length: n }, (_, k) => value(i, rank, k)));
      const sent = sendCounts.flatMap((n, j) =>
        Array.from({ length: n }, (_, k) => value(rank, j, k))
      );
      if (c.inPlace) {
        // In place: one buffer, by recv's counts, so the pattern is made symmetric (what rank j
        // sends this rank is as long as what this rank sends it), as MPI requires.
        const inPlaceCounts = recvCounts.map((_, j) =>
          pairCount(c.pattern, Math.min(rank, j), Math.max(rank, j), size)
        );
        const buf = await buffer(
          inPlaceCounts.flatMap((n, j) => Array.from({ length: n }, (_, k) => value(rank, j, k))),
        );
        await comm.alltoallv(buf, buf, { recvCounts: inPlaceCounts, algorithm: c.algorithm });
        got = await read(buf);
        want = inPlaceCounts.flatMap((n, i) =>
          Array.from({ length: n }, (_, k) => value(i, rank, k))
        );
        comm.free(buf);
      } else {
        const send = await buffer(sent), recv = await buffer(new Array(sum(recvCounts)).fill(-1));
        await comm.alltoallv(send, recv, { sendCounts, recvCounts, algorithm: c.algorithm });
        got = await read(recv);
        comm.free(send);
        comm.free(recv);
      }
    } else if (c.collective === "reduceScatterv") {
      const counts = Array.from({ length: size }, (_, r) => rankCount(c.pattern, r, size));
      const full = Array.from({ length: sum(counts) }, (_, e) => (rank + 1) * (e + 1));
      const send = await buffer(full);
      const displ = packed(counts)[rank];
      const recv = c.inPlace
        ? send.subarray(displ, displ + counts[rank])
        : await buffer(new Array(counts[rank]).fill(-1));
      await comm.reduceScatterv(send, recv, { recvCounts: counts, algorithm: c.algorithm });
      got = await read(recv);
      const ranks = size * (size + 1) / 2;
      want = Array.from({ length: counts[rank] }, (_, k) => ranks * (displ + k + 1));
      comm.free(send);
      if (!c.inPlace) comm.free(recv);
    } else {
      const counts = Array.from({ length: size }, (_, r) => rankCount(c.pattern, r, size));
      const block = (r: number) => Array.from({ length: counts[r] }, (_, k) => value(r, 0, k));
      const all = counts.flatMap((_, r) => block(r));
      const displs = packed(counts);
      if (c.collective === "allgatherv") {
        const recv = await buffer(
          c.inPlace
            ? counts.flatMap((n, r) => r === rank ? block(r) : new Array(n).fill(-1))
            : new Array(all.length).fill(-1),
        );
        const send = c.inPlace
          ? recv.subarray(displs[rank], displs[rank] + counts[rank])
          : await buffer(block(rank));
        await comm.allgatherv(send, recv, { recvCounts: counts, algorithm: c.algorithm });
        got = await read(recv);
        want = all;
        if (!c.inPlace) comm.free(send);
        comm.free(recv);
      } else if (c.collective === "gatherv") {
        const isRoot = rank === root;
        const recv = isRoot
          ? await buffer(
            counts.flatMap((n, r) => r === rank && c.inPlace ? block(r) : new Array(n).fill(-1)),
          )
          : undefined;
        const send = isRoot && c.inPlace
          ? recv!.subarray(displs[rank], displs[rank] + counts[rank])
          : await buffer(block(rank));
        await comm.gatherv(send, recv, { recvCounts: counts, root, algorithm: c.algorithm });
        got = isRoot ? await read(recv!) : [];
        want = isRoot ? all : [];
        if (!(isRoot && c.inPlace)) comm.free(send);
        if (recv) comm.free(recv);
      } else {
        const isRoot = rank === root;
        const send = isRoot ? await buffer(all) : undefined;
        const recv = isRoot && c.inPlace
          ? send!.subarray(displs[rank], displs[rank] + counts[rank])
          : await buffer(new Array(counts[rank]).fill(-1));
        await comm.scatterv(send, recv, { sendCounts: counts, root, algorithm: c.algorithm });
        got = await read(recv);
        want = block(rank);
        if (!(isRoot && c.inPlace)) comm.free(recv);
        if (send) comm.free(send);
      }
    }
    const wrong = got.findIndex((v, k) => v !== want[k]);
    if (got.length !== want.length || wrong >= 0) {
      problems.push(
        `rank ${rank} ${what}: element ${wrong}: got ${got[wrong]}, want ${want[wrong]}`,
      );
    }
  }
  return problems;
}
