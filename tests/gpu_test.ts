// The device half (issue: WebGPU): every collective × algorithm on the gpu transport at 1–4
// logical ranks with exact inputs, a case past one binding window, gpu and managed memory staged
// over shm, worker and ws, managed migration states, mismatches and bad input. Runs on CI's
// software adapter (llvmpipe: ~11 ms per completion), so sizes stay small; skips only where no
// adapter exists at all.
import { assert_, assertEquals, assertRejects, FAIL_FAST_TIMEOUT_MS } from "./_assert.ts";
import { failures, matrix } from "./_matrix.ts";
import { gpuTest } from "./_gpu.ts";
import type { CheckCase } from "./ranks/check_rank.ts";
import { type RankFailedError } from "../mod.ts";
import { liveWorkers } from "../primitives/launch/workers.ts";
import { launchGroup } from "../deno/launch/group.ts";
import { launchThread } from "../primitives/launch/thread.ts";
import { GpuThreads } from "../primitives/launch/gpu_teardown.ts";
import { threadEnded } from "../deno/platform/threads.ts";
import { liveProcesses } from "../deno/launch/processes.ts";
import type { MemoryKind } from "../primitives/types.ts";
import { TRANSPORT_TABLE, type TransportName } from "../deno/transport_table.ts";

const CHECK = new URL("./ranks/check_rank.ts", import.meta.url);

async function check(
  transport: TransportName,
  size: number,
  cases: CheckCase[],
  maxBindingBytes?: number,
): Promise<void> {
  const group = maxBindingBytes
    ? launchThread<number[]>(CHECK, { size, args: cases, maxBindingBytes })
    : launchGroup<number[]>(CHECK, { size, transport, args: cases, gpu: true });
  assertEquals(failures(cases, await group.results), []);
  assertEquals([liveWorkers(), liveProcesses()], [0, 0]);
}

/** The transport whose ranks share one device, and the workers and processes transports. */
const [DEVICE] = TRANSPORT_TABLE.launching("thread");
const WORKERS = TRANSPORT_TABLE.launching("workers");
const [PROCESSES] = TRANSPORT_TABLE.launching("processes");

for (const size of [1, 2, 3, 4]) {
  gpuTest(
    `${DEVICE}: every primitive, algorithm, op and count is exact, ${size} logical ranks`,
    () => check(DEVICE, size, matrix(DEVICE, size)),
  );
}

gpuTest(
  `${DEVICE}: managed memory on the device transport is exact, 3 logical ranks`,
  () => check(DEVICE, 3, matrix(DEVICE, 3, "managed").filter((c) => c.op === "sum")),
);

gpuTest(`${DEVICE}: buffers past one binding window (a 4 KiB window, 65537 floats)`, () => {
  const big = matrix(DEVICE, 3).filter((c) => c.count === 65537 && c.algorithm !== "auto");
  assert_(big.length >= 10, `${big.length} cases`);
  return check(DEVICE, 3, big, 4096);
});

for (const transport of WORKERS) {
  for (const memory of ["gpu", "managed"] as MemoryKind[]) {
    gpuTest(
      `gpu: ${memory} memory staged over ${transport} is exact, 3 ranks`,
      () => check(transport, 3, matrix(transport, 3, memory).filter((c) => c.op !== "prod")),
    );
  }
}

gpuTest(
  `gpu: pipelined staging over several segments (2^21 + 3 floats), ${WORKERS[0]} and ${PROCESSES}`,
  async () => {
    const cases: CheckCase[] = (["allreduce", "bcast", "reduce"] as const).map((primitive) => ({
      primitive,
      algorithm: "pipelined",
      count: 2 ** 21 + 3,
      op: "sum",
      dtype: "f32",
      memory: "gpu",
      root: 1,
    }));
    await check(WORKERS[0], 2, cases);
    await check(PROCESSES, 2, [cases[0]]);
  },
);

gpuTest("gpu: managed buffers migrate page runs on demand and count them", async () => {
  const managed = new URL("./ranks/managed_rank.ts", import.meta.url);
  await launchGroup(managed, { size: 1, transport: "shm", gpu: true }).results;
});

gpuTest(
  "gpu: f16 and bf16 at odd offsets keep their neighbours and reduce to the host's values, aligned or not",
  async () => {
    const half = new URL("./ranks/half_device_rank.ts", import.meta.url);
    await launchGroup(half, { size: 1, transport: "shm", gpu: true }).results;
  },
);

gpuTest(
  "gpu: gpu_direct rounds f16 and bf16 after each rank's term, as the host does, at 3 and 4 ranks",
  async () => {
    const rounding = new URL("./ranks/half_rounding_rank.ts", import.meta.url);
    for (const size of [3, 4]) {
      const results = await launchThread<Record<string, number>>(rounding, { size }).results;
      assertEquals(results, results.map(() => ({ f16: 0, bf16: 0 })), `${size} ranks`);
    }
  },
);

gpuTest("gpu: max and min keep NaN and order −0 below +0 as the host kernels do", async () => {
  const order = new URL("./ranks/order_device_rank.ts", import.meta.url);
  const [cases] = await launchGroup<number>(order, { size: 1, transport: "shm", gpu: true })
    .results;
  assertEquals(cases, 3 * 2 * (4 * 49 + 3));
});

gpuTest("gpu: mismatched calls and bad input fail clearly", async () => {
  const err = await assertRejects(
    () =>
      launchThread(new URL("./ranks/faults_rank.ts", import.meta.url), {
        size: 3,
        args: { mode: "bcast-vs-allreduce" },
      }).results,
    { name: "RankFailedError" },
  ) as RankFailedError;
  assert_(/MismatchError: Rank \d called (bcast|allreduce)\(/.test(err.message), err.message);
  const bad = await launchThread<Record<string, string>>(
    new URL("./ranks/device_errors_rank.ts", import.meta.url),
    { size: 2 },
  ).results;
  assertEquals(bad[0], {
    f64:
      "TypeError: Device kernels work on f32, i32, f16 and bf16, not f64: WGSL has no 64-bit floats (WebGPU offers no shader-f64)",
    shared:
      "TypeError: Cannot allocate shared memory on transport gpu: it carries host, gpu, managed",
    mixed:
      "TypeError: Cannot mix gpu and host memory in one call on transport gpu: one is used on the device, the other on the host",
    algorithm:
      "RangeError: Unknown allreduce algorithm ring for transport gpu with device buffers: expected auto, gpu_direct, gpu_ring",
    foreign: "rank 0's own",
  });
  // Logical ranks share a thread, so rank 1 can reach rank 0's buffer: it is refused.
  assertEquals(
    bad[1].foreign,
    "TypeError: Rank 1 cannot allreduce a buffer allocated by rank 0: a buffer belongs to the " +
      "communicator that allocated it",
  );
});

gpuTest(
  "gpu: device messages whose ends never meet fail at the timeout, naming the peer",
  async () => {
    const errors = await launchGroup<string>(
      new URL("./ranks/unmatched_device_rank.ts", import.meta.url),
      { size: 2, transport: "gpu", gpu: true, timeoutMs: 1500 },
    ).results;
    for (const e of errors) {
      assert_(
        /^CommTimeoutError: Rank \d timed out after 1500 ms waiting for rank \d to receive its device message \(tag 0\)$/
          .test(e),
        e,
      );
    }
  },
);

Deno.test("gpu: a launcher waits until a terminated GPU worker's thread has ended", async () => {
  // What keeps a device's teardown from overlapping the next device's opening (gpu_teardown.ts);
  // no device is needed to watch the thread.
  const threads = new GpuThreads(1);
  const worker = new Worker(new URL("./ranks/thread_id_worker.ts", import.meta.url), {
    type: "module",
  });
  await new Promise((recorded) => {
    worker.onmessage = recorded;
    worker.postMessage(threads.ids);
  });
  const id = threads.ids![0];
  assert_(id > 0 && !threadEnded(id), `the worker's thread ${id} is not one that runs`);
  worker.terminate();
  await threads.ended(FAIL_FAST_TIMEOUT_MS);
  assert_(threadEnded(id), `thread ${id} still runs after the wait`);
});

gpuTest(
  "gpu: workers holding devices close them before they end; the process exits cleanly",
  async () => {
    // The command that once aborted with glibc's "corrupted size vs. prev_size": the launcher
    // terminated workers whose devices were still tearing down.
    for (let run = 0; run < 2; run++) {
      const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          new URL("../scripts/bcast.ts", import.meta.url).pathname,
          "--transport",
          "worker",
          "--memory",
          "gpu",
          "--procs",
          "3",
          "--max",
          "4K",
          "--iters",
          "2",
        ],
        stdin: "null",
      }).output();
      const text = new TextDecoder();
      assertEquals([code, text.decode(stderr)], [0, ""], `run ${run}`);
      const rows = text.decode(stdout).split("\n").filter((l) => /^\s+\d/.test(l));
      assertEquals(rows.length, 13, text.decode(stdout));
    }
  },
);

Deno.test("gpu: device memory where no device was opened, or no adapter exists, is a clear error", async () => {
  // A rank started without a device cannot allocate device memory.
  const [r] = await launchGroup<string>(new URL("./ranks/device_errors_rank.ts", import.meta.url), {
    size: 1,
    transport: "shm",
  }).results;
  assertEquals(
    r,
    "TypeError: Cannot allocate gpu memory: this rank has no WebGPU device (start the group with { gpu: true })",
  );
  // The CLI refuses up front where no adapter answers (a backend this machine lacks hides it).
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("../scripts/allreduce.ts", import.meta.url).pathname,
      "--transport",
      "gpu",
    ],
    env: { DENO_WEBGPU_BACKEND: "dx12" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  assertEquals(out.code, 2, stderr);
  assert_(
    /^dccl allreduce: --transport gpu needs a WebGPU device, and no WebGPU adapter/.test(stderr),
    stderr,
  );
});
