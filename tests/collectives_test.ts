// The correctness matrix: transports × ranks × counts × algorithms × ops × dtypes × memory kinds,
// with exact integer-valued inputs, so every algorithm must equal the exact expected result.
import type { CheckCase } from "./ranks/check_rank.ts";
import type { PipelineArgs } from "./ranks/pipeline_rank.ts";
import type { PublishArgs } from "./ranks/publish_rank.ts";
import { ROUNDS } from "./ranks/reuse_rank.ts";
import { assert_, assertEquals } from "./_assert.ts";
import { schedulerCalls } from "../deno/platform/scheduler_calls.ts";
import { heavyFence } from "../deno/platform/membarrier.ts";
import { failures, matrix } from "./_matrix.ts";
import { runRanks } from "./_spawn_ranks.ts";
import { TRANSPORT_TABLE } from "../deno/transport_table.ts";

/** Where membarrier and sched_yield exist (and so are used): Linux on x86-64. */
const LINUX_X86 = Deno.build.os === "linux" && Deno.build.arch === "x86_64";

for (const transport of TRANSPORT_TABLE.launching("workers")) {
  for (const size of [1, 2, 3, 4, 7, 8]) {
    Deno.test(`every primitive, algorithm, op and count is exact: ${transport}, ${size} ranks`, async () => {
      const cases = matrix(transport, size);
      const wrong = await runRanks<number[]>("check_rank.ts", { size, transport, args: cases });
      assertEquals(failures(cases, wrong), []);
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

  Deno.test(`buffers past the caches, odd counts, every root, both memory kinds: ${transport}, 3 ranks`, async () => {
    const count = 2 ** 20 + 3;
    const cases: CheckCase[] = (["shared", "host"] as const).flatMap((memory) => [
      {
        primitive: "allreduce",
        algorithm: "auto",
        count,
        op: "sum",
        dtype: "f32",
        memory,
        root: 0,
      },
      ...[0, 1, 2].map((root): CheckCase => ({
        primitive: "bcast",
        algorithm: "auto",
        count,
        op: "sum",
        dtype: "f32",
        memory,
        root,
      })),
    ]);
    const wrong = await runRanks<number[]>("check_rank.ts", { size: 3, transport, args: cases });
    assertEquals(failures(cases, wrong), []);
  });

  Deno.test(`a sent buffer may be overwritten once send resolves: ${transport}`, async () => {
    // 1000 floats fit one cloned segment; 2^20 floats are transferred in several segments.
    for (const count of [1000, 2 ** 20]) {
      const [, got] = await runRanks<number[][]>("reuse_rank.ts", {
        size: 2,
        transport,
        args: count,
      });
      const sent = Array.from({ length: ROUNDS }, (_, round) => [round + 1, round + 1]);
      assertEquals(got, sent, `${count} floats`);
    }
  });

  Deno.test(`back-to-back small bcasts and reduces with rotating roots are exact: ${transport}`, async () => {
    // On shm, writers of small calls return before anyone reads: 600 calls lap the slots many
    // times; 4 and 8 ranks outnumber this machine's cores. 1025 floats take the eager path.
    for (const size of [2, 3, 4, 8]) {
      for (const count of [1, 1024, 1025]) {
        const args: PipelineArgs = { count, calls: 600 };
        const wrong = await runRanks<number>("pipeline_rank.ts", { size, transport, args });
        assertEquals(wrong, new Array(size).fill(0), `${size} ranks, ${count} floats`);
      }
    }
  });

  Deno.test(`calls that repeat the last one on the same buffers, or change one argument, are exact: ${transport}`, async () => {
    for (const size of [2, 3]) {
      const failed = await runRanks<string[]>("repeat_rank.ts", { size, transport });
      assertEquals(failed, new Array(size).fill([]), `${size} ranks`);
    }
  });

  Deno.test(`ranks may mix in place, out of place and memory kinds in one allreduce: ${transport}`, async () => {
    const counts = [1, 1000, 2 ** 18 + 5]; // eager, and past the eager slots on shm
    const wrong = await runRanks<number>("placement_rank.ts", { size: 4, transport, args: counts });
    assertEquals(wrong, [0, 0, 0, 0]);
  });
}

Deno.test({
  name: `shm publishes small calls with plain stores${
    LINUX_X86 ? "" : " (ignored: plain stores publish on Linux x86-64 only)"
  }, and readers never see them early`,
  ignore: !LINUX_X86,
}, async () => {
  // On x86-64 Linux with FFI, publications are plain stores and sleepers run membarrier
  // (membarrier.ts); 3 × 50 000 calls with fresh values would show a reordering as stale data.
  assert_(heavyFence() !== undefined, "membarrier is available on Linux x86-64 with FFI");
  for (const size of [2, 3]) {
    const args: PublishArgs = { calls: 50_000, pauseEvery: 10_000 };
    const wrong = await runRanks<number>("publish_rank.ts", { size, transport: "shm", args });
    assertEquals(wrong, new Array(size).fill(0), `${size} ranks`);
  }
});

Deno.test({
  name: `shm waits can hand their core over (sched_yield) and see their CPU${
    LINUX_X86 ? "" : " (ignored: the calls are Linux x86-64's)"
  }`,
  ignore: !LINUX_X86,
}, () => {
  const calls = schedulerCalls();
  assert_(calls !== undefined, "FFI is granted and the C library is known on Linux");
  calls.yieldCore();
  const cpu = calls.currentCpu();
  assert_(cpu >= 0 && cpu < navigator.hardwareConcurrency, `CPU ${cpu}`);
});
