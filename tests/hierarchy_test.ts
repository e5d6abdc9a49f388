// Hierarchical groups (`--threads`, primitives/transports/hierarchy.ts): processes of several
// ranks each, sharing memory inside a process and linked over tcp, ws or websocket. Every primitive, every
// flat algorithm and the hierarchical ones are exact at uneven shapes; a rank that fails is named
// by its group-wide rank; the CLI runs them.
import {
  assert_,
  assertEquals,
  assertFailedFast,
  assertRejects,
  FAIL_FAST_TIMEOUT_MS,
} from "./_assert.ts";
import { failures, matrix } from "./_matrix.ts";
import { launchProcesses, liveProcesses } from "../deno/launch/processes.ts";
import { launchGroup } from "../deno/launch/group.ts";
import type { RankFailedError } from "../mod.ts";

const rankModule = (name: string) => new URL(`./ranks/${name}`, import.meta.url);

// processes × threads: one host; two of two; uneven in both directions.
// websocket: the mesh whose sends need the event loop, which the shm level's waits block.
const SHAPES: [number, number, "tcp" | "ws" | "websocket"][] = [
  [1, 2, "tcp"],
  [2, 2, "tcp"],
  [3, 2, "tcp"],
  [2, 3, "ws"],
  [2, 2, "websocket"],
];

for (const [procs, threads, transport] of SHAPES) {
  Deno.test(`hierarchy: every primitive and algorithm is exact, ${procs} processes × ${threads} ranks over ${transport}`, async () => {
    const size = procs * threads;
    const cases = matrix(transport, size, "shared", threads)
      .filter((c) => c.count <= 1001 || c.algorithm === "hierarchical" || c.algorithm === "auto");
    assert_(cases.some((c) => c.algorithm === "hierarchical"), "hierarchical algorithms run");
    const wrong = await launchProcesses<number[]>(rankModule("check_rank.ts"), {
      size: procs,
      threads,
      transport,
      args: cases,
      timeoutMs: 20_000,
    }).results;
    assertEquals(wrong.length, size);
    assertEquals(failures(cases, wrong), []);
    assertEquals(liveProcesses(), 0);
  });
}

Deno.test("hierarchy: a rank that throws is named by its group-wide rank; its process's others and the rest fail fast", async () => {
  const start = performance.now();
  const err = await assertRejects(
    () =>
      launchProcesses(rankModule("faults_rank.ts"), {
        size: 2,
        threads: 2,
        transport: "tcp",
        args: { mode: "throw-on-1" },
        timeoutMs: FAIL_FAST_TIMEOUT_MS,
        onLine: () => {},
      }).results,
    { name: "RankFailedError", message: /^Rank 1 failed: Error: boom from rank 1$/ },
  ) as RankFailedError;
  assertEquals(err.outcomes.length, 4);
  assertFailedFast(start, FAIL_FAST_TIMEOUT_MS, "a thrower across processes");
  assertEquals(liveProcesses(), 0);
});

Deno.test("hierarchy: threads apply to processes transports only", () => {
  let thrown: unknown;
  try {
    launchGroup(rankModule("sum_rank.ts"), { size: 2, threads: 2, transport: "shm" });
  } catch (e) {
    thrown = e;
  }
  assert_(thrown instanceof RangeError, String(thrown));
  assert_(/threads 2 is not accepted with transport shm/.test((thrown as Error).message));
});
