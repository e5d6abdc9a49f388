// The correctness matrix: transports × ranks × counts × algorithms × ops × dtypes × memory kinds,
// with exact integer-valued inputs, so every algorithm must equal the exact expected result.
import type { CheckCase } from "./ranks/check_rank.ts";
import { algorithmsFor, type CollectiveName } from "../mod.ts";
import { type PrimitiveName, PRIMITIVES } from "../bench/primitives.ts";
import type { Dtype, MemoryKind, ReduceOp, TransportName } from "../mod.ts";
import { assertEquals } from "./_assert.ts";
import { runRanks } from "./_spawn_ranks.ts";

const COUNTS = [0, 1, 4, 1000, 65537];
const OPS: ReduceOp[] = ["sum", "prod", "max", "min", "avg"];

function matrix(transport: TransportName, size: number): CheckCase[] {
  const cases: CheckCase[] = [];
  const add = (c: Omit<CheckCase, "root"> & { root?: number }) =>
    cases.push({ root: size - 1, ...c });
  for (const primitive of Object.keys(PRIMITIVES) as PrimitiveName[]) {
    const collective = PRIMITIVES[primitive].collective;
    const algorithms = collective
      ? ["auto", ...algorithmsFor(collective as CollectiveName, transport)]
      : ["auto"];
    const reduces = collective === "allreduce" || collective === "reduce" ||
      collective === "reduceScatter";
    for (const algorithm of algorithms) {
      for (const count of COUNTS) {
        // Every op on small counts; the large odd count with sum keeps the suite quick.
        for (const op of reduces && count <= 1000 ? OPS : ["sum" as const]) {
          add({ primitive, algorithm, count, op, dtype: "f32", memory: "shared", repeat: 2 });
        }
      }
      for (const dtype of ["f64", "i32"] as Dtype[]) {
        for (const op of reduces ? OPS : ["sum" as const]) {
          add({ primitive, algorithm, count: 1001, op, dtype, memory: "shared" });
        }
      }
      for (const memory of ["host"] as MemoryKind[]) {
        for (const count of [3, 65537]) {
          add({ primitive, algorithm, count, op: "sum", dtype: "f32", memory, root: 0 });
        }
      }
    }
  }
  return cases;
}

for (const transport of ["shm", "worker"] as const) {
  for (const size of [1, 2, 3, 4, 7, 8]) {
    Deno.test(`every primitive, algorithm, op and count is exact: ${transport}, ${size} ranks`, async () => {
      const cases = matrix(transport, size);
      const wrong = await runRanks<number[]>("check_rank.ts", { size, transport, args: cases });
      const failures = cases.flatMap((c, i) => {
        const perRank = wrong.map((w) => w[i]);
        return perRank.some((w) => w !== 0)
          ? [
            `${c.primitive}/${c.algorithm} ${c.dtype} ${c.memory} ${c.op} count=${c.count}: wrong=${perRank}`,
          ]
          : [];
      });
      assertEquals(failures, []);
    });
  }

  Deno.test(`allreduce of 2^24 floats is exact: ${transport}, 2 ranks`, async () => {
    const cases: CheckCase[] = [
      {
        primitive: "allreduce",
        algorithm: "auto",
        count: 2 ** 24,
        op: "sum",
        dtype: "f32",
        memory: "shared",
        root: 0,
      },
    ];
    const wrong = await runRanks<number[]>("check_rank.ts", { size: 2, transport, args: cases });
    assertEquals(wrong, [[0], [0]]);
  });
}
