/**
 * The seeds' CPU-versus-GPU matmul sweep (their study 004): GEMM GFLOP/s against size for the
 * kernels the trainer computes with — the WebAssembly kernels (kernels/mlp.ts) or the WGSL ones
 * (kernels/mlp_gpu.ts) — each beside its peak measured in the same sitting: the WebAssembly SIMD
 * peak of one thread, or the device's FMA peak (the `peak` kernel). A rank program:
 * `train-study matmul` runs it on one rank, then on one with a device.
 * @module
 */

import type { Communicator } from "../core.ts";
import { simdPeakGflops } from "../kernels/mod.ts";
import { WasmMlpKernels } from "./kernels/mlp.ts";
import { GpuMlpKernels, PEAK_FLOPS_PER_ROUND, type Tensor } from "./kernels/mlp_gpu.ts";

/** What the launcher hands the rank. */
export interface MatmulArgs {
  device: "cpu" | "gpu";
  /** Square sizes: C (n × n) = A (n × n) · B (n × n). */
  sizes: number[];
  /** Time each size is measured for, at least, ms. */
  ms: number;
}

/** The sweep on one device: GFLOP/s at each size, and the device's peak. */
export interface MatmulResult {
  kernels: string;
  peakGflops: number;
  gflops: number[];
}

/** Runs `op` (whose work is `flops`) in rounds until `ms` pass; GFLOP/s of the best round. */
async function rate(op: () => Promise<void> | void, flops: number, ms: number): Promise<number> {
  await op(); // compile, fill caches
  let best = 0;
  const end = performance.now() + ms;
  for (let round = 0; round < 3 || performance.now() < end; round++) {
    const start = performance.now();
    await op();
    best = Math.max(best, flops / ((performance.now() - start) / 1000) / 1e9);
  }
  return best;
}

/**
 * How many dispatches a submit needs for its work to outweigh Deno's completion floor (~11 ms):
 * doubled from one until a submit takes 100 ms (on a slow device one may already take more).
 */
async function enough(submit: (times: number) => Promise<void>): Promise<number> {
  for (let times = 1;; times *= 2) {
    const start = performance.now();
    await submit(times);
    if (performance.now() - start >= 100 || times >= 2 ** 16) return times;
  }
}

/** Measures the sweep on this rank's CPU or device. */
export async function run(comm: Communicator, args: MatmulArgs): Promise<MatmulResult> {
  return args.device === "cpu" ? await onCpu(comm, args) : await onGpu(comm, args);
}

async function onCpu(comm: Communicator, { sizes, ms }: MatmulArgs): Promise<MatmulResult> {
  const heap = comm.heap, kernels = new WasmMlpKernels(heap);
  const gflops: number[] = [];
  for (const n of sizes) {
    const [a, b, c] = [0, 1, 2].map(() => heap.alloc("f32", n * n) as Float32Array);
    a.fill(0.5);
    b.fill(0.25);
    // Repeats enough GEMMs that a round of a small one is not all clock reading.
    const repeats = Math.max(1, Math.round(2 ** 24 / (n * n * n)));
    gflops.push(
      await rate(
        () => {
          for (let r = 0; r < repeats; r++) kernels.gemm(c, a, b, n, n, n);
        },
        2 * n * n * n * repeats,
        ms,
      ),
    );
    for (const x of [a, b, c]) heap.free(x);
  }
  return { kernels: `WebAssembly (${kernels.name} SIMD)`, peakGflops: simdPeakGflops(), gflops };
}

async function onGpu(comm: Communicator, { sizes, ms }: MatmulArgs): Promise<MatmulResult> {
  const gpu = comm.gpu;
  if (!gpu) throw new TypeError("the matmul sweep on the device needs a rank with a device");
  const device = gpu.device, kernels = await GpuMlpKernels.create(device);
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST;
  /** Submits `calls` `times` over and waits for their completion. */
  const submit = async (calls: ReturnType<GpuMlpKernels["gemm"]>[], times: number) => {
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    for (let t = 0; t < times; t++) kernels.record(pass, calls);
    pass.end();
    device.queue.submit([encoder.finish()]);
    await device.queue.onSubmittedWorkDone();
  };
  try {
    const gflops: number[] = [];
    for (const n of sizes) {
      const [a, b, c] = [0, 1, 2].map(() => device.createBuffer({ size: 4 * n * n, usage }));
      const t = (buffer: GPUBuffer): Tensor => ({ buffer, offset: 0 });
      const call = kernels.gemm(t(c), t(a), t(b), n, n, n);
      const times = await enough((k) => submit([call], k));
      gflops.push(await rate(() => submit([call], times), 2 * n * n * n * times, ms));
      for (const x of [a, b, c]) x.destroy();
    }
    const threads = 256 * 1024, out = device.createBuffer({ size: 4 * threads, usage });
    const rounds = 1024;
    const peak = kernels.peak({ buffer: out, offset: 0 }, threads, rounds);
    const times = await enough((k) => submit([peak], k));
    const peakGflops = await rate(
      () => submit([peak], times),
      times * threads * rounds * PEAK_FLOPS_PER_ROUND,
      ms,
    );
    out.destroy();
    return { kernels: `WGSL on ${gpu.info.description}`, peakGflops, gflops };
  } finally {
    kernels.destroy();
  }
}
