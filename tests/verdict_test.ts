// The launchers' verdict (primitives/launch/verdict.ts): whichever order the ranks' reports come
// in, the group's failure names the rank that caused it.
import { assertEquals } from "./_assert.ts";
import { GroupEnds, type RankEnd } from "../primitives/launch/verdict.ts";

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
