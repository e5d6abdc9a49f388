// Reproducible sums over the group: every reducing collective, every algorithm each transport
// runs, 1–8 ranks (tcp up to 5), several ways of spreading the same terms over the ranks, the
// hierarchy and device buffers, every float dtype — each result bit for bit the BigInt reference's
// (so bit for bit each other's). Ranks that disagree on `reproducible` fail fast, and what it
// cannot do is refused in one line.
import { assert_, assertEquals, assertFailedFast, FAIL_FAST_TIMEOUT_MS } from "./_assert.ts";
import { expectedLine } from "./_expected.ts";
import { runRanks } from "./_spawn_ranks.ts";
import { gpuTest } from "./_gpu.ts";
import type { ReproducibleCase } from "./ranks/reproducible_rank.ts";
import { TERM_KINDS } from "./_reproducible_terms.ts";
import { TRANSPORTS } from "../deno/transport_table.ts";
import { algorithmsFor, sideOfMemory } from "../internal.ts";
import { DEVICE_MEMORY } from "../primitives/types.ts";
import type { MemoryKind } from "../core.ts";
import { launchGroup } from "../mod.ts";

const COLLECTIVES = ["allreduce", "reduce", "reduceScatter", "reduceScatterv"] as const;
const DTYPES = ["f32", "f64", "f16", "bf16"] as const;
/** One element and seven take the one-pass records (f32, bf16); 1009 the window's two passes. */
const COUNTS = [1, 7, 1009];

/** Every collective × algorithm the transport runs × dtype × count, the kinds of term in turn. */
function cases(
  transport: keyof typeof TRANSPORTS,
  memory: MemoryKind,
  seed: number,
  threads = 1,
): ReproducibleCase[] {
  const facts = TRANSPORTS[transport], side = sideOfMemory(facts, memory);
  const out: ReproducibleCase[] = [];
  for (const collective of COLLECTIVES) {
    for (const algorithm of algorithmsFor(collective, { transport: facts, side, threads })) {
      // WGSL has no f64: device memory holds no f64 buffers.
      for (const dtype of DTYPES.filter((d) => d !== "f64" || !DEVICE_MEMORY.includes(memory))) {
        for (const count of COUNTS) {
          const kind = TERM_KINDS[out.length % TERM_KINDS.length];
          const op = out.length % 5 === 4 ? "avg" : "sum";
          out.push({ collective, algorithm, memory, dtype, count, kind, seed, op, terms: 9 });
        }
      }
    }
  }
  return out;
}

const RANKS = { shm: [1, 2, 3, 4, 5, 6, 7, 8], worker: [2, 3], tcp: [1, 2, 3, 4, 5], ws: [2, 3] };

for (const [transport, sizes] of Object.entries(RANKS) as [keyof typeof RANKS, number[]][]) {
  Deno.test(`reproducible sums: the reference's bits on ${transport}, ${sizes.join(", ")} ranks`, async () => {
    for (const size of sizes) {
      // Each rank count spreads the terms its own way; four ranks try two more ways.
      for (const seed of size === 4 ? [size, 40, 41] : [size]) {
        const problems = await runRanks<string[]>("reproducible_rank.ts", {
          size,
          transport,
          args: cases(transport, TRANSPORTS[transport].bestMemory, seed),
        });
        assertEquals(problems.flat(), [], `${size} ranks, seed ${seed}`);
      }
    }
  });
}

Deno.test("reproducible sums: the reference's bits on a hierarchy, 2 processes × 2 threads over tcp", async () => {
  const problems = await runRanks<string[]>("reproducible_rank.ts", {
    size: 2,
    threads: 2,
    transport: "tcp",
    args: cases("tcp", "shared", 5, 2),
  });
  assertEquals(problems.flat(), []);
});

Deno.test("reproducible sums: 2^17 + 1 elements, four ranks, every dtype", async () => {
  const args: ReproducibleCase[] = DTYPES.map((dtype) => ({
    collective: "allreduce",
    algorithm: "auto",
    memory: "shared",
    dtype,
    count: 2 ** 17 + 1,
    kind: "spread",
    seed: 9,
    terms: 6,
  }));
  const problems = await runRanks<string[]>("reproducible_rank.ts", {
    size: 4,
    transport: "shm",
    args,
  });
  assertEquals(problems.flat(), []);
});

gpuTest(
  "reproducible sums: the reference's bits in gpu and managed memory, and on the gpu transport",
  async () => {
    const runs = [["shm", "gpu"], ["shm", "managed"], ["gpu", "gpu"]] as const;
    for (const [transport, memory] of runs) {
      for (const size of [1, 3]) {
        const problems = await runRanks<string[]>("reproducible_rank.ts", {
          size,
          transport,
          gpu: true,
          args: cases(transport, memory, 6),
        });
        assertEquals(problems.flat(), [], `${transport}, ${memory}, ${size} ranks`);
      }
    }
  },
);

for (const count of [1, 1009]) {
  Deno.test(`reproducible sums: a rank that sums plainly where the others sum reproducibly fails fast, ${count} elements`, async () => {
    const start = performance.now();
    const err = await launchGroup(
      new URL("./ranks/reproducible_disagree_rank.ts", import.meta.url),
      {
        size: 3,
        transport: "shm",
        args: count,
        timeoutMs: FAIL_FAST_TIMEOUT_MS,
        onLine: expectedLine,
      },
    ).results.then(() => undefined, (e) => e);
    assert_(err !== undefined, "the group ended well");
    assert_(/Mismatch/.test(err.message) && /reproducible/.test(err.message), err.message);
    assertFailedFast(start, FAIL_FAST_TIMEOUT_MS, err.message);
  });
}

Deno.test("reproducible sums: what they cannot do is refused in one line", async () => {
  const [messages] = await runRanks<string[]>("reproducible_errors_rank.ts", {
    size: 1,
    transport: "shm",
  });
  assertEquals(messages, [
    "RangeError: Cannot multiply reproducibly: reproducible takes sum and avg (max and min are exact)",
    "TypeError: reproducible must be true or false, not yes",
    "RangeError: Cannot allreduce 5 into 2 elements on 1 ranks: need out = input length, or a " +
    "whole number of terms of out's length (reproducible)",
    "TypeError: Cannot allreduce f32 into f64: dtypes must match",
    "RangeError: Cannot sum 268435456 × f32 reproducibly: at most 134217728 elements (their " +
    "accumulators are 2^30 bytes)",
    "RangeError: Cannot allreduce 4 into 2 elements: several terms need a reproducible sum (sum " +
    "or avg of f32, f64, f16 or bf16)",
  ]);
});
