// Rank program for reproducible sums: each case spreads one set of terms over the ranks (an
// allreduce's ranks may hold several, or none; the other collectives' one each, in an order of
// the seed's), runs the collective with `reproducible`, and returns every element whose bits
// differ from the BigInt reference's, so the test sees every failure at once.
import type { CommBuffer, Communicator, MemoryKind } from "../../core.ts";
import { referenceSum } from "../_reproducible_reference.ts";
import { mulberry32, type TermKind, termsOf } from "../_reproducible_terms.ts";
import type { ReproducibleDtype } from "../../kernels/reproducible.ts";
import { makeView } from "../../primitives/types.ts";
import { setValues, valuesOf } from "../../kernels/elements.ts";

export interface ReproducibleCase {
  collective: "allreduce" | "reduce" | "reduceScatter" | "reduceScatterv";
  algorithm: string;
  memory: MemoryKind;
  dtype: ReproducibleDtype;
  /** Elements of one term (an allreduce's result). */
  count: number;
  kind: TermKind;
  /** Picks the terms and which rank holds each. */
  seed: number;
  op?: "sum" | "avg";
  /** An allreduce's terms, every rank's together (the others: one per rank). */
  terms?: number;
}

const same = (a: number, b: number) => Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));

export async function run(comm: Communicator, cases: ReproducibleCase[]): Promise<string[]> {
  const { rank, size } = comm;
  const problems: string[] = [];
  for (const c of cases) {
    const op = c.op ?? "sum", divisor = op === "avg" ? size : 1;
    const rooted = c.collective === "reduce", root = size - 1;
    const scatters = c.collective === "reduceScatter" || c.collective === "reduceScatterv";
    // A reduce-scatter's term is size blocks of `count`; a v one's blocks are 1, 2, … elements.
    const counts = Array.from(
      { length: size },
      (_, r) => c.collective === "reduceScatterv" ? r + 1 : c.count,
    );
    const length = scatters ? counts.reduce((s, n) => s + n, 0) : c.count;
    const many = c.collective === "allreduce" ? c.terms ?? size : size;
    const terms = termsOf(c.kind, c.dtype, many, length, c.seed);
    // Which rank holds each term: any for an allreduce, one each (shuffled) for the others.
    const random = mulberry32(c.seed);
    const holder = c.collective === "allreduce"
      ? terms.map(() => Math.floor(random() * size))
      : terms.map((_, j) => j).sort(() => random() - 0.5);
    const mine = terms.filter((_, j) => holder[j] === rank);
    const want = Array.from(
      { length },
      (_, i) => referenceSum(terms.map((t) => t[i]), c.dtype, divisor),
    );
    const host = makeView(
      c.dtype,
      new ArrayBuffer(Math.max(1, mine.length * length) * 8),
      0,
      mine.length * length,
    );
    setValues(host, mine.flat());
    const input = comm.alloc(host.length, { dtype: c.dtype, memory: c.memory });
    await input.write(host);
    const at = scatters ? counts.slice(0, rank).reduce((s, n) => s + n, 0) : 0;
    const mineOut = scatters ? counts[rank] : length;
    const output = comm.alloc(mineOut, { dtype: c.dtype, memory: c.memory });
    const options = { op, algorithm: c.algorithm, reproducible: true } as const;
    if (c.collective === "allreduce") await comm.allreduce(input, { ...options, out: output });
    else if (c.collective === "reduce") await comm.reduce(input, { ...options, out: output, root });
    else if (c.collective === "reduceScatter") await comm.reduceScatter(input, output, options);
    else await comm.reduceScatterv(input, output, { ...options, recvCounts: counts });
    if (!rooted || rank === root) {
      const got = makeView(c.dtype, new ArrayBuffer(mineOut * 8), 0, mineOut);
      await output.read(got);
      const values = valuesOf(got);
      const wrong = values.flatMap((v, i) =>
        same(v, want[at + i]) ? [] : [`[${at + i}] ${v} ≠ ${want[at + i]}`]
      );
      if (wrong.length > 0) {
        problems.push(
          `rank ${rank} ${JSON.stringify(c)}: ${wrong.length} wrong, ${
            wrong.slice(0, 3).join(", ")
          }`,
        );
      }
    }
    free(comm, input, output);
  }
  return problems;
}

function free(comm: Communicator, ...buffers: CommBuffer[]) {
  for (const b of buffers) comm.free(b);
}
