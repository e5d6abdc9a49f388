// The collectives with per-rank counts (alltoallv, allgatherv, gatherv, scatterv,
// reduceScatterv): exact on every transport, the hierarchy and device buffers, with counts that
// include zeros, one rank with everything and primes, in place where MPI allows it, every
// algorithm; a bad count named before anything is sent; ranks that disagree on counts fail fast.
import { assert_, assertEquals, assertFailedFast, FAIL_FAST_TIMEOUT_MS } from "./_assert.ts";
import { runRanks } from "./_spawn_ranks.ts";
import { gpuTest } from "./_gpu.ts";
import type { Pattern, VCase } from "./ranks/v_rank.ts";
import { TRANSPORTS } from "../deno/transport_table.ts";
import { algorithmsFor, sideOfMemory } from "../internal.ts";
import type { MemoryKind } from "../core.ts";
import { launchGroup } from "../mod.ts";
import { expectedLine } from "./_expected.ts";

const COLLECTIVES = ["alltoallv", "allgatherv", "gatherv", "scatterv", "reduceScatterv"] as const;
const PATTERNS: Pattern[] = ["zeros", "one", "primes", "equal"];

/** Every collective × pattern × algorithm the transport runs, and the in-place forms. */
function cases(transport: keyof typeof TRANSPORTS, size: number, memory: MemoryKind, threads = 1) {
  const facts = TRANSPORTS[transport];
  const side = sideOfMemory(facts, memory);
  const out: VCase[] = [];
  for (const collective of COLLECTIVES) {
    for (const algorithm of algorithmsFor(collective, { transport: facts, side, threads })) {
      for (const pattern of PATTERNS) {
        const root = size - 1;
        out.push({ collective, pattern, algorithm, memory, root });
        out.push({ collective, pattern, algorithm, memory, root, inPlace: true });
      }
    }
  }
  return out;
}

for (const [transport, size] of [["shm", 5], ["worker", 3], ["tcp", 3], ["ws", 2]] as const) {
  Deno.test(`v collectives: exact with zeros, one rank with everything and primes: ${transport}, ${size} ranks`, async () => {
    for (const n of [1, size]) {
      const problems = await runRanks<string[]>("v_rank.ts", {
        size: n,
        transport,
        args: cases(transport, n, TRANSPORTS[transport].bestMemory),
      });
      assertEquals(problems.flat(), []);
    }
  });
}

Deno.test("v collectives: exact on a hierarchy, 2 processes × 2 threads over tcp", async () => {
  const problems = await runRanks<string[]>("v_rank.ts", {
    size: 2,
    threads: 2,
    transport: "tcp",
    args: cases("tcp", 4, "shared", 2),
  });
  assertEquals(problems.flat(), []);
});

gpuTest("v collectives: exact in gpu memory, staged over shm", async () => {
  const problems = await runRanks<string[]>("v_rank.ts", {
    size: 3,
    transport: "shm",
    gpu: true,
    args: cases("shm", 3, "gpu"),
  });
  assertEquals(problems.flat(), []);
});

Deno.test("v collectives: a bad count or displacement is named before anything is sent", async () => {
  const [messages] = await runRanks<string[]>("v_errors_rank.ts", { size: 1, transport: "shm" });
  const expected = [
    /alltoallv: recvCounts has 2 entries; expected 1, one per rank/,
    /alltoallv: sendCounts\[0\] = -1 is not accepted; expected an integer ≥ 0/,
    /alltoallv: sendCounts\[0\] = 1\.5 is not accepted/,
    /alltoallv: block 0 of recv \(recvCounts\[0\] = 5 from recvDispls\[0\] = 2\) ends at 7, past its 6 elements/,
    /Cannot alltoallv without sendCounts/,
    /allgatherv .* need send = recvCounts\[0\] \(3\)/,
    /reduceScatterv .* need send = the sum of recvCounts \(4\), recv = recvCounts\[0\] \(4\)/,
    /Cannot gatherv to root 0 without recv/,
    /scatterv: sendCounts must be an array of 1 integers/,
  ];
  assertEquals(messages.length, expected.length, messages.join("\n"));
  for (const [i, re] of expected.entries()) assert_(re.test(messages[i]), messages[i]);
});

for (const transport of ["shm", "worker", "tcp"] as const) {
  Deno.test(`v collectives: ranks that disagree on a count fail fast with a MismatchError: ${transport}`, async () => {
    for (
      const algorithm of algorithmsFor("alltoallv", {
        transport: TRANSPORTS[transport],
        side: "host",
      })
    ) {
      const start = performance.now();
      const err = await launchGroup(new URL("./ranks/v_disagree_rank.ts", import.meta.url), {
        size: 3,
        transport,
        args: algorithm,
        timeoutMs: FAIL_FAST_TIMEOUT_MS,
        onLine: expectedLine,
      }).results.then(() => undefined, (e) => e);
      assert_(err !== undefined, `${algorithm}: the group ended well`);
      assert_(/Mismatch/.test(String(err.message)), `${algorithm}: ${err.message}`);
      assertFailedFast(start, FAIL_FAST_TIMEOUT_MS, `${algorithm}: ${err.message}`);
    }
  });
}
