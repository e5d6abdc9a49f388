// Faults are features: survivors of a failed peer catch the error and go on, launchers blame the
// rank that caused a failure, mismatched calls fail on every transport, inputs stay exact up to
// 256 ranks, and a rank that never returns is named. Process tests stay bounded in time.
// Rendezvous faults: rendezvous_test.ts.
import { type RankFailedError, spawnRanks } from "../mod.ts";
import { liveProcesses } from "../deno/launch/processes.ts";
import { liveWorkers } from "../primitives/launch/workers.ts";
import { launchProcesses } from "../deno/launch/processes.ts";
import {
  assert_,
  assertEquals,
  assertFailedFast,
  assertRejects,
  FAIL_FAST_TIMEOUT_MS,
} from "./_assert.ts";
import type { FaultArgs, FaultMode } from "./ranks/faults_rank.ts";
import { expectedReduction, inputValue } from "../bench/exact_inputs.ts";
import { launchGroup } from "../deno/launch/group.ts";
import { type TransportName } from "../deno/transport_table.ts";
import { TRANSPORTS } from "../deno/transport_table.ts";
import { gpuTest } from "./_gpu.ts";
import type { ReduceOp } from "../primitives/types.ts";

const FAULTS = new URL("./ranks/faults_rank.ts", import.meta.url);
const quiet = () => {};

const isProcesses = (t: TransportName) => TRANSPORTS[t].launch === "processes";

/**
 * Runs the faults rank program on every transport kind the test names; `env` goes to process
 * ranks.
 */
function group(
  transport: TransportName,
  size: number,
  args: FaultArgs,
  env: Record<string, string>,
  timeoutMs = FAIL_FAST_TIMEOUT_MS,
) {
  if (isProcesses(transport)) {
    const mesh = transport as TransportName;
    return launchProcesses(FAULTS, { size, transport: mesh, args, timeoutMs, env, onLine: quiet });
  }
  return launchGroup(FAULTS, { size, transport, args, timeoutMs });
}

// The gpu transport (logical ranks of one thread) runs where an adapter exists, one GPU test at a
// time across the suite (tests/_gpu.ts). tcp runs twice:
// with socket calls and with Deno's own reads and writes (deno/transports/socket_calls.ts),
// each forced so that both run whatever the machine's core count.
const TRANSPORTS_HERE: [TransportName, string, Record<string, string>][] = [
  ["shm", "shm", {}],
  ["worker", "worker", {}],
  ["ws", "ws", {}],
  ["tcp", "tcp, socket calls", { DCCL_TCP_FFI: "1" }],
  ["tcp", "tcp, Deno I/O", { DCCL_TCP_FFI: "0" }],
  ["gpu", "gpu", {}],
];

for (const [transport, named, env] of TRANSPORTS_HERE) {
  const test = transport === "gpu"
    ? gpuTest
    : (name: string, fn: () => Promise<void>) => Deno.test(name, fn);
  test(`faults: survivors catch a peer's failure, keep running and form a new group: ${named}`, async () => {
    const store = Deno.makeTempDirSync();
    const err = await assertRejects(
      () => group(transport, 3, { mode: "survive", store }, env).results,
      {
        name: "RankFailedError",
        message: /^Rank 1 failed: Error: boom from rank 1$/,
      },
    ) as RankFailedError;
    for (const r of [0, 2]) {
      const outcome = err.outcomes[r];
      assertEquals(outcome.status, "ok", `rank ${r}: ${JSON.stringify(outcome)}`);
      const result = outcome.result;
      assertEquals(result, {
        caught: "PeerFailedError: Rank 1 failed: Error: boom from rank 1",
        later: "PeerFailedError", // the broken communicator keeps failing fast
        sum: 3, // 1 + 2 in the survivors' new group
      });
    }
    assertEquals(err.outcomes[1].status, "failed");
    assertEquals([liveWorkers(), liveProcesses()], [0, 0]);
  });

  test(`faults: the launcher blames the rank that threw, with its message: ${named}`, async () => {
    // The bug was nondeterministic (the first rank to exit was blamed): repeat.
    for (let i = 0; i < (isProcesses(transport) ? 4 : 3); i++) {
      const err = await assertRejects(
        () => group(transport, 3, { mode: "throw-on-1" }, env).results,
        {
          name: "RankFailedError",
          message: /^Rank 1 failed: Error: boom from rank 1$/,
        },
      ) as RankFailedError;
      assertEquals(err.failedRank, 1);
      for (const r of [0, 2]) {
        assert_(
          err.outcomes[r].status === "stopped" ||
            /PeerFailedError: Rank 1 failed/.test(err.outcomes[r].reason ?? ""),
          JSON.stringify(err.outcomes[r]),
        );
      }
    }
  });

  test(`faults: a rank that never returns after its last collective is named: ${named}`, async () => {
    const start = performance.now();
    const g = isProcesses(transport)
      ? launchProcesses(FAULTS, {
        size: 3,
        transport: transport as TransportName,
        args: { mode: "straggle" },
        stragglerMs: 1000,
        timeoutMs: FAIL_FAST_TIMEOUT_MS,
        env,
        onLine: quiet,
      })
      : launchGroup(FAULTS, {
        size: 3,
        transport,
        args: { mode: "straggle" },
        stragglerMs: 1000,
        timeoutMs: FAIL_FAST_TIMEOUT_MS,
      });
    await assertRejects(() => g.results, {
      name: "RankFailedError",
      message: /^Rank 1 failed: it had not finished 1000 ms after rank [02] did/,
    });
    assertFailedFast(start, FAIL_FAST_TIMEOUT_MS, "a straggler");
    assertEquals([liveWorkers(), liveProcesses()], [0, 0]);
  });

  const mismatches: [FaultMode, RegExp][] = [
    [
      "bcast-vs-allreduce",
      /called (bcast\(262144 × f32, root 0, \w+\)|allreduce\(sum, 262144 × f32, \w+\)) but rank \d called (allreduce|bcast)/,
    ],
    [
      "bcast-roots",
      /bcast\(262144 × f32, root [01], \w+\) but rank \d called bcast\(262144 × f32, root [01]/,
    ],
    [
      "reduce-roots",
      /reduce\(sum, 262144 × f32, root [01], \w+\) but rank \d called reduce\(sum, 262144 × f32, root [01]/,
    ],
    [
      "dtypes",
      /allreduce\(sum, 1000 × (i32|f32), \w+\) but rank \d called allreduce\(sum, 1000 × (f32|i32)/,
    ],
    ["ops", /allreduce\((max|sum), 262144 × f32, \w+\) but rank \d called allreduce\((sum|max)/],
  ];
  if (transport !== "shm") {
    mismatches.push([
      "algorithms",
      /allreduce\(sum, 262144 × f32, (ring|recursive_doubling|gpu_ring|gpu_direct)\) but/,
    ]);
  }
  // Processes cost a second each: ws and tcp check the kinds that used to pass silently on ws.
  const kinds = isProcesses(transport)
    ? mismatches.filter(([m]) =>
      m === "bcast-vs-allreduce" || m === "dtypes" || m === "bcast-roots"
    )
    : mismatches;
  test(`faults: mismatched calls fail with MismatchError on every rank that sees them: ${named}`, async () => {
    for (const [mode, message] of kinds) {
      const err = await assertRejects(() => group(transport, 3, { mode }, env).results, {
        name: "RankFailedError",
      });
      assert_(/MismatchError: Rank \d called /.test(err.message), `${mode}: ${err.message}`);
      assert_(message.test(err.message), `${mode}: ${err.message}`);
    }
    assertEquals([liveWorkers(), liveProcesses()], [0, 0]);
  });
}

Deno.test("faults: pipelined small bcast and reduce on shm still fail on every mismatch", async () => {
  const small: [FaultMode, RegExp][] = [
    ["small-bcast-roots", /MismatchError: Rank \d and rank \d made different small bcast\/reduce/],
    [
      "small-bcast-roots-last",
      /MismatchError: Rank \d called bcast\(1 × f32, root [01], shm_direct\) but rank \d called bcast\(1 × f32, root [01]/,
    ],
    [
      "small-reduce-roots",
      /MismatchError: Rank [01] called reduce\(sum, 1 × f32, root [01], shm_direct\) but rank [01] called reduce\(sum, 1 × f32, root [01]/,
    ],
    [
      "small-bcast-vs-allreduce",
      /MismatchError: Rank [12] called allreduce\(sum, 1 × f32, shm_direct\) but rank 0 called bcast\(1 × f32, root 0/,
    ],
  ];
  for (const [mode, message] of small) {
    const start = performance.now();
    const err = await assertRejects(() => group("shm", 3, { mode }, {}).results, {
      name: "RankFailedError",
    });
    assert_(message.test(err.message), `${mode}: ${err.message}`);
    assertFailedFast(start, FAIL_FAST_TIMEOUT_MS, mode);
  }
  assertEquals(liveWorkers(), 0);
});

Deno.test("faults: a stopped (SIGSTOP) process is blamed, not the rank that timed out on it", async () => {
  // Once every rank runs the loop (on a busy machine that can take seconds) rank 2 is stopped;
  // the group's timeout is what the others then wait.
  let looping = 0;
  let running!: () => void;
  const all = new Promise<void>((resolve) => running = resolve);
  // Test modules share this process: the marker picks this test's own ranks out of its children.
  const marker = `FAULTS_SIGSTOP=${crypto.randomUUID()}`;
  const g = launchProcesses(FAULTS, {
    size: 3,
    args: { mode: "loop" },
    env: { FAULTS_SIGSTOP: marker.split("=")[1] },
    timeoutMs: 5000,
    onLine: (_, stream, line) => {
      if (stream === "stdout" && line === "looping" && ++looping === 3) running();
    },
  });
  const late = setTimeout(() => running(), 120_000); // then findRankPid fails, saying so
  await Promise.race([all, g.results]);
  clearTimeout(late);
  const pid = findRankPid(2, marker);
  Deno.kill(pid, "SIGSTOP");
  const err = await assertRejects(() => g.results, { name: "RankFailedError" });
  assert_(
    /^Rank 2 failed: .*CommTimeoutError: Rank [01] timed out/.test(err.message),
    err.message,
  );
  assertEquals(liveProcesses(), 0);
});

/** The pid of the process rank started with RANK=`rank` and `marker` in its environment. */
function findRankPid(rank: number, marker: string): number {
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const env = Deno.readTextFileSync(`/proc/${entry.name}/environ`).split("\0");
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`).split(" ");
      const ours = Number(stat[3]) === Deno.pid && env.includes(marker);
      if (ours && env.includes(`RANK=${rank}`)) return Number(entry.name);
    } catch { /* gone, or not ours */ }
  }
  throw new Error(`no child with RANK=${rank} and ${marker}`);
}

Deno.test("faults: inputs stay exact for every op, dtype and rank count up to 256", () => {
  // Sums in f32 are exact when every partial sum is, in any order: check the extremes of each
  // size (the largest magnitudes) forward and backward.
  for (const size of [1, 2, 3, 8, 31, 32, 33, 64, 100, 160, 255, 256]) {
    for (const op of ["sum", "avg", "max", "min", "prod"] as ReduceOp[]) {
      for (const i of [0, 1, 2, 3, 1000, 65535, 65536, 1 << 20]) {
        const values = Array.from({ length: size }, (_, r) => inputValue(op, r, size, i));
        for (const dtype of ["f32", "f64", "i32"] as const) {
          const exact = expectedReduction(op, dtype, size, (r) => values[r]);
          for (const order of [values, [...values].reverse()]) {
            let acc = order[0];
            for (const v of order.slice(1)) {
              acc = op === "max"
                ? Math.max(acc, v)
                : op === "min"
                ? Math.min(acc, v)
                : op === "prod"
                ? (dtype === "i32" ? Math.imul(acc, v) : round(dtype, acc * v))
                : round(dtype, acc + v);
            }
            if (op === "avg") {
              acc = dtype === "i32" ? Math.trunc(acc / size) : round(dtype, acc / size);
            }
            assertEquals(acc, exact, `${op} ${dtype} ${size} ranks, element ${i}`);
          }
        }
      }
    }
  }
});

function round(dtype: "f32" | "f64" | "i32", v: number): number {
  return dtype === "f32" ? Math.fround(v) : dtype === "i32" ? v | 0 : v;
}

Deno.test("faults: 64 ranks allreduce exactly through the CLI", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      ...["run", "-A", new URL("../scripts/allreduce.ts", import.meta.url).pathname],
      ...["--procs", "64", "--min", "1K", "--max", "1K", "--iters", "2", "--warmup", "1"],
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
  const row = text.trim().split("\n").filter((l) => !l.startsWith("#"));
  assertEquals(row.length, 1);
  assertEquals(row[0].trim().split(/\s+/)[8], "0", row[0]); // #wrong
});

Deno.test("faults: a group of 1 … 8 ranks that is fine stays fine (no false mismatch)", async () => {
  for (const size of [1, 2, 5, 8]) {
    const sums = await spawnRanks<number>(new URL("./ranks/sum_rank.ts", import.meta.url), {
      size,
    });
    assertEquals(sums, new Array(size).fill((size * (size + 1)) / 2));
  }
});
