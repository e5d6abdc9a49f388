// Curves for compare's tests: two made-up curves over the same sizes.
import { toCurves } from "../bench/compare/crossover.ts";

/** Curves A and B at 1, 2, 4, … floats with these µs per op. */
export function twoCurves(a: number[], b: number[]) {
  const point = (transport: string, us: number, i: number) => ({
    source: "t.csv",
    primitive: "allreduce",
    procs: 2,
    transport,
    memory: "host",
    algorithm: "auto",
    threads: 1,
    type: "f32",
    floats: 2 ** i,
    time_us: us,
    gbps: 1,
    wrong: 0,
  });
  return toCurves([...a.map((us, i) => point("A", us, i)), ...b.map((us, i) => point("B", us, i))]);
}
