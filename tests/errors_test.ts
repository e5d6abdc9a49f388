// Bad input gets RangeError/TypeError naming the value and the limit; faults (a rank that throws,
// a worker that is terminated, a rank that never arrives, mismatched counts) make every other rank
// fail fast with an error naming the failed rank, and leave no worker running.
import { spawnRanks } from "../mod.ts";
import { TRANSPORT_NAMES, TRANSPORTS } from "../deno/transport_table.ts";
import { liveWorkers } from "../primitives/launch/workers.ts";
import { launchWorkers } from "../primitives/launch/workers.ts";
import { launchGroup } from "../deno/launch/group.ts";
import {
  assert_,
  assertEquals,
  assertFailedFast,
  assertRejects,
  FAIL_FAST_TIMEOUT_MS,
} from "./_assert.ts";
import { RANKS_DIR, runRanks } from "./_spawn_ranks.ts";

const ERRORS = new URL("errors_rank.ts", RANKS_DIR);

for (const transport of TRANSPORT_NAMES.filter((t) => !TRANSPORTS[t].needsDevice)) {
  Deno.test(`bad arguments are RangeError or TypeError with clear messages: ${transport}`, async () => {
    const [r] = await launchGroup<Record<string, string>>(ERRORS, {
      size: 4,
      transport,
      args: "bad-arguments",
    }).results;
    assertEquals(r.root, "RangeError: Cannot broadcast from root 5: communicator size is 4");
    assert_(r.peer.startsWith("RangeError: Cannot send to rank 4: peers are 0 … 3"), r.peer);
    assert_(r.tag.startsWith("RangeError: Invalid tag -1"), r.tag);
    assert_(r.count.startsWith("RangeError: Cannot allocate 536870912 × f32"), r.count);
    assert_(r.dtype.startsWith("TypeError: Cannot allreduce f32 into f64"), r.dtype);
    assert_(r.outLength.startsWith("RangeError: Cannot allreduce 16 into 15"), r.outLength);
    assert_(r.algorithm.startsWith("RangeError: Unknown allreduce algorithm bogus"), r.algorithm);
    assert_(r.op.startsWith("TypeError: Unknown reduce op xor"), r.op);
    assert_(r.memory.startsWith("TypeError: Cannot allocate gpu memory"), r.memory);
    assert_(r.allgather.startsWith("RangeError: Cannot allgather 16 into 17"), r.allgather);
    assert_(r.alltoall.startsWith("RangeError: Cannot alltoall 16 into 15"), r.alltoall);
    assertEquals(r.gatherRecv, "TypeError: Cannot gather to root 0 without recv");
    assert_(
      r.gatherLength.startsWith(
        "RangeError: Cannot gather 16 into 16 elements on 4 ranks: " +
          "need recv = size × send",
      ),
      r.gatherLength,
    );
    assertEquals(r.scatterSend, "TypeError: Cannot scatter from root 0 without send");
    assertEquals(r.scatterRoot, "RangeError: Cannot scatter from root -1: communicator size is 4");
    assertEquals(
      r.nothing,
      "TypeError: Cannot allreduce null: expected a CommBuffer (comm.alloc) or a Float32Array, " +
        "Float64Array, Int32Array, Float16Array or Uint16Array (bf16)",
    );
    assertEquals(
      r.array,
      "TypeError: Cannot allreduce an Array: expected a CommBuffer (comm.alloc) or a Float32Array, " +
        "Float64Array, Int32Array, Float16Array or Uint16Array (bf16)",
    );
    assertEquals(
      r.detached,
      "TypeError: Cannot allreduce a buffer whose memory was transferred (its ArrayBuffer is detached)",
    );
    assertEquals(
      r.foreign,
      "TypeError: Rank 0 cannot allreduce a buffer allocated by another communicator of this " +
        "rank: a buffer belongs to the communicator that allocated it",
    );
    assertEquals(
      r.overlap,
      "RangeError: Cannot allreduce between buffers that share memory: in place out is the " +
        "input itself; otherwise the buffers must not overlap",
    );
    assertEquals(
      r.alltoallInPlace,
      "RangeError: Cannot alltoall between buffers that share memory: alltoall has no in-place " +
        "form; otherwise the buffers must not overlap",
    );
    assertEquals(
      r.allgatherBlock,
      "RangeError: Cannot allgather between buffers that share memory: in place send is block 0 " +
        "(this rank's) of recv; otherwise the buffers must not overlap",
    );
    assertEquals(r.closed, "CommError: Communicator of rank 0 is closed");
    assertEquals(r.after, "no error", "argument errors leave the communicator usable");
  });
}

for (const transport of ["shm", "worker"] as const) {
  Deno.test(`mismatched counts across ranks are reported: ${transport}`, async () => {
    await assertRejects(
      () => runRanks("errors_rank.ts", { size: 2, transport, args: "count-mismatch" }),
      {
        name: "RankFailedError",
        message:
          /MismatchError: Rank [01] called allreduce\(sum, (1000|999) × f32, ring\) but rank [01] called allreduce\(sum, (999|1000) × f32, ring\)/,
      },
    );
  });

  Deno.test(`a rank that throws mid-allreduce fails the group fast, naming it: ${transport}`, async () => {
    const start = performance.now();
    const err = await assertRejects(
      () =>
        runRanks("errors_rank.ts", {
          size: 4,
          transport,
          args: "throw-mid-allreduce",
          timeoutMs: FAIL_FAST_TIMEOUT_MS,
        }),
      { name: "RankFailedError", message: /^Rank 1 failed: Error: boom from rank 1/ },
    );
    assertEquals((err as { failedRank?: number }).failedRank, 1);
    assertFailedFast(start, FAIL_FAST_TIMEOUT_MS, "a throwing rank");
  });

  Deno.test(`a terminated worker fails the group fast, naming it: ${transport}`, async () => {
    const group = launchWorkers(ERRORS, {
      size: 3,
      transport,
      args: "loop-allreduce",
      timeoutMs: FAIL_FAST_TIMEOUT_MS,
    });
    setTimeout(() => group.kill(2), 300);
    const start = performance.now();
    await assertRejects(() => group.results, {
      name: "RankFailedError",
      message: /^Rank 2 failed: worker was terminated/,
    });
    assertFailedFast(start, FAIL_FAST_TIMEOUT_MS, "a terminated worker");
    assertEquals(liveWorkers(), 0);
  });

  Deno.test(`a rank that skips a collective is named at once, not after the timeout: ${transport}`, async () => {
    const start = performance.now();
    await assertRejects(
      () =>
        spawnRanks(ERRORS, {
          size: 3,
          transport,
          args: "skip-collective",
          timeoutMs: FAIL_FAST_TIMEOUT_MS,
        }),
      {
        name: "RankFailedError",
        message:
          /^Rank 2 failed: rank [01] found a mismatch with it: MismatchError: Rank [01] called allreduce\(sum, 16 × f32, ring\) but rank 2 had closed its communicator after 0 collective calls/,
      },
    );
    assertFailedFast(start, FAIL_FAST_TIMEOUT_MS, "a skipped collective");
    assertEquals(liveWorkers(), 0);
  });
}

Deno.test("a rank alone in its group is told it has no peers to send to or receive from", async () => {
  const [r] = await launchGroup<Record<string, string>>(ERRORS, {
    size: 1,
    transport: "shm",
    args: "alone",
  }).results;
  assertEquals(r, {
    send:
      "RangeError: Cannot send to rank 1: this rank is the only one (a group of 1 has no peers)",
    recv:
      "RangeError: Cannot receive from rank 0: this rank is the only one (a group of 1 has no peers)",
    any: "RangeError: Cannot receive from any rank: this rank is the only one",
  });
});
