// The launchers' verdict (primitives/launch/blame.ts): whichever order the ranks' reports come
// in, the group's failure names the rank that caused it.
import { assertEquals } from "./_assert.ts";
import { GroupEnds, type RankEnd } from "../primitives/launch/blame.ts";
import { oddCall } from "../primitives/launch/mismatch_blame.ts";
import { callStamp } from "../primitives/communicator/stamp.ts";
import { Supervisor } from "../primitives/launch/supervisor.ts";
import type { RankFailedError } from "../primitives/errors.ts";

type End = Omit<RankEnd, "at">;

/** The rank each order of these ends blames, and the verdict's message, per order. */
function verdicts(ends: [number, End][]): [number, string][] {
  const orders = [ends, [...ends].reverse()];
  return orders.map((order) => {
    const group = new GroupEnds(Math.max(...ends.map(([r]) => r)) + 2);
    for (const [rank, end] of order) group.record(rank, end);
    const v = group.verdict()!;
    return [v.failedRank!, v.message];
  });
}

const failed = (name: string, message: string, blames?: number, accused?: boolean): End => ({
  status: "failed",
  name,
  reason: `${name}: ${message}`,
  blames,
  accused,
});

Deno.test("verdict: a rank that skipped a call is blamed, not the rank that noticed", () => {
  const skip = "Rank 0 called allreduce(sum, 1 × f32, ring) but rank 1 had closed its communicator";
  const blamed = verdicts([
    [0, failed("MismatchError", skip, 1)],
    [1, failed("PeerFailedError", `Rank 0 failed: it gave up on rank 1: ${skip}`, 0, true)],
  ]);
  for (const [rank, message] of blamed) {
    assertEquals(rank, 1);
    assertEquals(message, `Rank 1 failed: rank 0 found a mismatch with it: MismatchError: ${skip}`);
  }
});

Deno.test("verdict: a skipped call is blamed when the rank that noticed caught its error and returned", () => {
  const skip = "Rank 0 called allreduce(sum, 1 × f32, ring) but rank 1 had closed its communicator";
  const blamed = verdicts([
    [0, { status: "ok", result: "caught MismatchError" }],
    [
      1,
      failed(
        "PeerFailedError",
        `Rank 0 failed: it gave up on rank 1: MismatchError: ${skip}`,
        0,
        true,
      ),
    ],
    [2, { status: "ok", result: "caught MismatchError" }],
  ]);
  for (const [rank, message] of blamed) {
    assertEquals(rank, 1);
    assertEquals(
      message,
      `Rank 1 failed: rank 0 found it at fault and went on: MismatchError: ${skip}`,
    );
  }
});

Deno.test("verdict: a skipped call is blamed when the skipper heard of it from a third rank", () => {
  // Rank 0 found the mismatch; rank 2 gave up on rank 1 because of it, and rank 1 heard rank 2's
  // notice first: ranks 1 and 2 name each other, but rank 0's check names rank 1.
  const skip = "Rank 0 called allreduce(sum, 1 × f32, ring) but rank 1 had closed its communicator";
  const blamed = verdicts([
    [0, failed("MismatchError", skip, 1)],
    [2, failed("PeerFailedError", `Rank 0 failed: it gave up on rank 1: ${skip}`, 1)],
    [1, failed("PeerFailedError", `Rank 2 failed: it gave up on rank 1: ${skip}`, 2)],
  ]);
  for (const [rank, message] of blamed) {
    assertEquals(rank, 1);
    assertEquals(message, `Rank 1 failed: rank 0 found a mismatch with it: MismatchError: ${skip}`);
  }
});

Deno.test("verdict: ranks timing out on each other point at the rank that never reported", () => {
  // Rank 2 was stopped; rank 1 timed out on rank 0 and told it so before rank 0 timed out itself.
  const blamed = verdicts([
    [1, failed("CommTimeoutError", "Rank 1 timed out waiting for rank 0", 0)],
    [0, failed("PeerFailedError", "Rank 1 failed: it gave up on rank 0: timed out", 1, true)],
  ]);
  assertEquals(blamed.map(([rank]) => rank), [2, 2]);
});

Deno.test("verdict: a rank that threw its own error is blamed over those that failed because of it", () => {
  const blamed = verdicts([
    [0, failed("PeerFailedError", "Rank 1 failed: Error: boom", 1)],
    [1, failed("Error", "boom")],
    [2, failed("PeerFailedError", "Rank 1 failed: Error: boom", 1)],
  ]);
  assertEquals(blamed, [[1, "Rank 1 failed: Error: boom"], [1, "Rank 1 failed: Error: boom"]]);
});

Deno.test("verdict: the rank whose call differs from the majority's is blamed, ties by the root's view", () => {
  const T = 2 ** 30; // the first collective's tag
  const gather = (root: number, count = 8) => callStamp("gather", "f32", count, "sum", root, 0);
  const allreduce = (count: number) => callStamp("allreduce", "f32", count, "sum", 0, 0);
  /** Ranks that each called `stamps[rank]`; `checker` found the mismatch, naming `named`. */
  const blamed = (stamps: number[], checker: number, named: number) => {
    const ends: [number, End][] = stamps.map((stamp, rank) => [rank, {
      ...(rank === checker
        ? failed("MismatchError", `Rank ${checker} called … but rank ${named} called …`, named)
        : failed("PeerFailedError", `Rank ${checker} failed: MismatchError: …`, checker)),
      calls: [[T - 1, allreduce(1)], [T, stamp]],
    }]);
    return verdicts(ends).map(([rank]) => rank);
  };
  // Rank 1 alone names another root or count; the check that found it ran on rank 1.
  assertEquals(blamed([gather(0), gather(2), gather(0)], 1, 0), [1, 1]);
  assertEquals(blamed([gather(0), gather(0, 9), gather(0)], 1, 2), [1, 1]);
  // Two against two: the side whose stamp names a root among its own ranks (the root's view).
  assertEquals(blamed([gather(3), gather(0), gather(0), gather(3)], 0, 1), [1, 1]);
  assertEquals(blamed([allreduce(4), allreduce(5), allreduce(4), allreduce(5)], 1, 0), [1, 1]);
  // Two ranks, each its own root: the lowest rank's view.
  assertEquals(blamed([gather(0), gather(1)], 0, 1), [1, 1]);
  assertEquals(oddCall(new Map([[0, [[T, gather(0)]]], [1, [[T, gather(0)]]]])), undefined);
});

Deno.test("verdict: ranks still closing when the stragglers' deadline ends are named, not settled without results", async () => {
  // `stragglerMs` is the whole deadline here: no rank ever reports again.
  const supervise = (returned: number[]) => {
    const s = new Supervisor<number>(3, { graceMs: 1, stragglerMs: 1 }, {
      relay() {},
      stop() {},
    });
    for (const r of returned) s.returned(r);
    s.ended(0, { status: "ok", result: 0 });
    return s.results.then(() => "settled", (e: RankFailedError) => e.message);
  };
  // Ranks 1 and 2 returned and never closed: one of them is named for it.
  assertEquals(
    await supervise([0, 1, 2]),
    "Rank 1 failed: it had not closed its communicator 1 ms after rank 0 finished",
  );
  // Rank 1 closes while rank 2 still runs: rank 2 is named.
  assertEquals(
    await supervise([0, 1]),
    "Rank 2 failed: it had not finished 1 ms after rank 0 did",
  );
});
