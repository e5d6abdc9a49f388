// Process ranks on a progress thread (--progress thread, DCCL_PROGRESS=thread): every collective
// exact through the forwarding front, in the heap and in staged host buffers, in place too (and
// on shm ranks, whose progress threads end with them, and whose failures are named fast); the
// v collectives; argument errors rebuilt with their class and message; a mismatch, a throwing
// rank and a killed one named on every other rank, fast; a bad DCCL_PROGRESS refused in a line.
import {
  assert_,
  assertEquals,
  assertFailedFast,
  assertThrows,
  FAIL_FAST_TIMEOUT_MS,
} from "./_assert.ts";
import { failures, matrix } from "./_matrix.ts";
import { assertKilledRankNamed, rankModule } from "./_process_ranks.ts";
import { expectedLine } from "./_expected.ts";
import type { VCase } from "./ranks/v_rank.ts";
import type { FaultArgs } from "./ranks/faults_rank.ts";
import { launchGroup } from "../deno/launch/group.ts";
import { liveProcesses } from "../deno/launch/processes.ts";
import { progressFromEnv } from "../deno/launch/env_rank.ts";

const thread = { transport: "tcp", progress: "thread" } as const;

Deno.test("progress thread: every primitive, algorithm, op and count is exact, heap and staged host buffers, 3 processes", async () => {
  // `shared` buffers live in the rank's heap and cross as slices; `host` ones are staged.
  const cases = [...matrix("tcp", 3, "shared"), ...matrix("tcp", 3, "host")]
    .filter((c) => c.dtype === "f32" || c.op === "sum");
  const wrong = await launchGroup<number[]>(rankModule("check_rank.ts"), {
    ...thread,
    size: 3,
    args: cases,
  }).results;
  assertEquals(failures(cases, wrong), []);
  assertEquals(liveProcesses(), 0);
});

/** Threads this process runs now (a progress thread that outlived its rank would be one more). */
function processThreads(): number {
  return [...Deno.readDirSync("/proc/self/task")].length;
}

Deno.test("progress thread: shm ranks' calls are exact on their own progress threads, which end with them", async () => {
  const before = processThreads();
  const cases = [...matrix("shm", 3, "shared"), ...matrix("shm", 3, "host")]
    .filter((c) =>
      (c.dtype === "f32" || c.op === "sum") && (c.count <= 1001 || c.algorithm === "auto")
    );
  const wrong = await launchGroup<number[]>(rankModule("check_rank.ts"), {
    transport: "shm",
    progress: "thread",
    size: 3,
    args: cases,
  }).results;
  assertEquals(failures(cases, wrong), []);
  // A terminated worker's threads end a moment after it; its progress thread with them.
  const deadline = performance.now() + 10_000;
  while (processThreads() > before && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
  }
  const after = processThreads();
  assert_(after <= before, `${after - before} threads left running`);
});

Deno.test("progress thread: an shm rank that throws is named on every other, fast", async () => {
  const start = performance.now();
  const args: FaultArgs = { mode: "throw-on-1" };
  const err = await launchGroup(rankModule("faults_rank.ts"), {
    transport: "shm",
    progress: "thread",
    size: 3,
    args,
    timeoutMs: FAIL_FAST_TIMEOUT_MS,
    onLine: expectedLine,
  }).results.then(() => undefined, (e: Error) => e);
  assert_(err !== undefined, "the group ended well");
  assert_(/^Rank 1 failed: Error: boom from rank 1$/.test(err.message), err.message);
  assertFailedFast(start, FAIL_FAST_TIMEOUT_MS, err.message);
});

Deno.test("progress thread: the v collectives are exact, in place too, 3 processes", async () => {
  const cases: VCase[] =
    (["alltoallv", "allgatherv", "gatherv", "scatterv", "reduceScatterv"] as const)
      .flatMap((collective) =>
        (["zeros", "one", "primes"] as const).flatMap((pattern) =>
          [false, true].map((inPlace) => ({
            collective,
            pattern,
            algorithm: "auto",
            memory: "host" as const,
            root: 2,
            inPlace,
          }))
        )
      );
  const problems = await launchGroup<string[]>(rankModule("v_rank.ts"), {
    ...thread,
    size: 3,
    args: cases,
  }).results;
  assertEquals(problems.flat(), []);
});

Deno.test("progress thread: argument errors come back with their class and message, as inline", async () => {
  const refusals = async (progress: "inline" | "thread") =>
    (await launchGroup<string[]>(rankModule("v_errors_rank.ts"), {
      transport: "tcp",
      progress,
      size: 1,
    }).results)[0];
  const [inline, onThread] = [await refusals("inline"), await refusals("thread")];
  assertEquals(onThread, inline);
  assert_(/^RangeError: .*recvCounts has 2 entries/.test(onThread[0]), onThread[0]);
  assert_(/^TypeError: Cannot alltoallv without sendCounts/.test(onThread[4]), onThread[4]);
  assert_(!onThread.includes("accepted"), onThread.join("\n"));
});

for (
  const [mode, message] of [
    [
      "bcast-vs-allreduce",
      /MismatchError: Rank \d called (bcast|allreduce)\(.* but rank \d called/,
    ],
    ["throw-on-1", /^Rank 1 failed: Error: boom from rank 1$/],
  ] as const
) {
  Deno.test(`progress thread: every rank fails fast, naming the right one: ${mode}`, async () => {
    const start = performance.now();
    const args: FaultArgs = { mode };
    const err = await launchGroup(rankModule("faults_rank.ts"), {
      ...thread,
      size: 3,
      args,
      timeoutMs: FAIL_FAST_TIMEOUT_MS,
      onLine: expectedLine,
    }).results.then(() => undefined, (e: Error & { outcomes: { reason?: string }[] }) => e);
    assert_(err !== undefined, "the group ended well");
    assert_(message.test(err.message), err.message);
    assertFailedFast(start, FAIL_FAST_TIMEOUT_MS, err.message);
    if (mode === "throw-on-1") {
      // The survivors' own errors crossed from their progress threads as PeerFailedErrors.
      for (const r of [0, 2]) {
        const reason = err.outcomes[r].reason ?? "stopped";
        assert_(/^(stopped|PeerFailedError: Rank 1 failed)/.test(reason), reason);
      }
    }
    assertEquals(liveProcesses(), 0);
  });
}

Deno.test("progress thread: when a rank is killed mid-collective every other rank fails fast, naming it", async () => {
  await assertKilledRankNamed("tcp", { DCCL_PROGRESS: "thread" });
});

Deno.test("progress thread: a bad DCCL_PROGRESS is refused in one line", () => {
  assertEquals(progressFromEnv({}), "inline");
  assertEquals(progressFromEnv({ DCCL_PROGRESS: "thread" }), "thread");
  assertThrows(
    () => progressFromEnv({ DCCL_PROGRESS: "threads" }),
    Error,
    /^DCCL_PROGRESS="threads" is not accepted: expected inline or thread$/,
  );
});
