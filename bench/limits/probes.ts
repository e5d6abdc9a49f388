/**
 * The probes of the machine's limits that any runtime with workers runs — Deno, or a browser
 * tab: a cache line's round trip between two workers through shared memory (the floor of any
 * `shm` handoff), a message's round trip between two workers (the floor of `worker`), the copy
 * and reduce bandwidth of one core and of all cores in WebAssembly memory (the ceiling of
 * `shm`'s busbw), the WebAssembly SIMD peak, and, where an adapter exists, a device copy's
 * bandwidth and a submit's round trip to completion. Each is measured as measure.ts says.
 * @module
 */

import { GpuDevice } from "../../internal.ts";
import { bestSimdBuild, limitsKernels, PEAK_FLOPS_PER_ITERATION } from "../../kernels/mod.ts";
import type { ProbeAnswer, ProbeTask } from "./probe_worker.ts";
import { type Sampled, summarize, timeTrials } from "./measure.ts";

/** Where the probe workers' module is (a tab's bundle has its own). */
export interface ProbeOptions {
  /** The probe worker's entry. @default {probe_worker.ts beside this module} */
  workerEntry?: URL | string;
}

/** Options of {@linkcode memoryBandwidth}. */
export interface BandwidthOptions extends ProbeOptions {
  /** `copy` (`memory.copy`) or `reduce` (a SIMD add: read two, write one). @default {"copy"} */
  op?: "copy" | "reduce";
  /** Workers measuring at once, their rates summed. @default {1} */
  cores?: number;
  /**
   * Destination blocks a copy writes in turn, as a stream's receiver fills a window of receives
   * (copy only). @default {1}
   */
  blocks?: number;
}

/** Runs `tasks` on as many workers at once; resolves with each one's answer. */
async function onWorkers(
  tasks: { task: ProbeTask; transfer?: Transferable[] }[],
  options?: ProbeOptions,
): Promise<ProbeAnswer[]> {
  const entry = options?.workerEntry ?? new URL("./probe_worker.ts", import.meta.url);
  const workers = tasks.map(() => new Worker(entry, { type: "module" }));
  try {
    return await Promise.all(
      tasks.map(({ task, transfer }, i) =>
        new Promise<ProbeAnswer>((resolve, reject) => {
          workers[i].onmessage = ({ data }) =>
            "error" in data ? reject(new Error(data.error)) : resolve(data);
          workers[i].onerror = (e) => {
            e.preventDefault();
            reject(new Error(e.message));
          };
          workers[i].postMessage(task, transfer ?? []);
        })
      ),
    );
  } finally {
    for (const w of workers) w.terminate();
  }
}

/** The round trip of one cache line between two workers through a SharedArrayBuffer, µs. */
export async function cacheLineRoundTrip(options?: ProbeOptions): Promise<Sampled> {
  const lines = new SharedArrayBuffer(128);
  const side = (pinger: boolean): ProbeTask => ({
    kind: "cacheLine",
    lines,
    pinger,
    roundTrips: 20_000,
    trials: 15,
  });
  const [times] = await onWorkers([{ task: side(true) }, { task: side(false) }], options);
  return summarize(times as number[]);
}

/** The round trip of a small message between two workers over a MessageChannel, µs. */
export async function postMessageRoundTrip(options?: ProbeOptions): Promise<Sampled> {
  const { port1, port2 } = new MessageChannel();
  const side = (pinger: boolean, port: MessagePort) => ({
    task: { kind: "postMessage", port, pinger, roundTrips: 500, trials: 9 } as ProbeTask,
    transfer: [port],
  });
  const [times] = await onWorkers([side(true, port1), side(false, port2)], options);
  return summarize(times as number[]);
}

/** Bandwidth of one kernel at each size: bytes, and GB/s (1e9 bytes of output per second). */
export interface BandwidthCurve {
  /** Buffer sizes, bytes. */
  bytes: number[];
  /** GB/s at each size. */
  gbs: Sampled[];
}

/** One core's copy into a window of destination blocks, each written in turn. */
export interface WindowCurve extends BandwidthCurve {
  /** The destination blocks. */
  blocks: number;
}

/**
 * The copy or reduce bandwidth at each of `sizes` bytes (multiples of 64), of one core or of
 * `cores` workers at once (their sum).
 */
export async function memoryBandwidth(
  sizes: readonly number[],
  options?: BandwidthOptions,
): Promise<BandwidthCurve> {
  const op = options?.op ?? "copy", cores = options?.cores ?? 1, blocks = options?.blocks ?? 1;
  if (!Number.isInteger(blocks) || blocks < 1 || (op === "reduce" && blocks > 1)) {
    throw new RangeError(`blocks is ${blocks}: a copy's destinations, a whole number from 1`);
  }
  const task: ProbeTask = {
    kind: "bandwidth",
    op,
    blocks,
    sizes: [...sizes],
    trials: 7,
    trialMs: 25,
    warmupMs: 600,
    workers: cores,
    arrivals: new SharedArrayBuffer(4),
  };
  const perWorker = await onWorkers(Array.from({ length: cores }, () => ({ task })), options);
  const gbs = sizes.map((_, g) => {
    const trials = (perWorker[0] as number[][])[g].map((_, t) =>
      (perWorker as number[][][]).reduce((sum, w) => sum + w[g][t], 0) / 1e9
    );
    return summarize(trials);
  });
  return { bytes: [...sizes], gbs };
}

/**
 * One core's copy into a window of `blocks` destinations (a stream's receives, OSU's `-W`), each
 * written in turn, at each of `sizes` bytes whose source and window fit in `maxBytes`.
 */
export async function windowCopy(
  sizes: readonly number[],
  options: ProbeOptions & { blocks: number; maxBytes: number },
): Promise<WindowCurve> {
  const { blocks, maxBytes } = options;
  const fitting = sizes.filter((bytes) => (2 + blocks) * bytes <= maxBytes);
  const curve = await memoryBandwidth(fitting, { ...options, op: "copy", cores: 1 });
  return { ...curve, blocks };
}

/** The WebAssembly SIMD peak of one thread, GFLOP/s, and the build it ran. */
export async function simdPeak(): Promise<{ gflops: Sampled; build: string }> {
  const build = bestSimdBuild();
  const { peak } = limitsKernels(new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true }));
  const iterations = 1 << 14;
  const rates = await timeTrials(() => (peak(iterations), iterations), {
    trials: 9,
    trialMs: 40,
    warmupMs: 100,
  });
  return { gflops: summarize(rates.map((r) => r * PEAK_FLOPS_PER_ITERATION / 1e9)), build };
}

/** A device's limits: a copy between device buffers, GB/s, and a submit's round trip, µs. */
export interface DeviceLimits {
  /** The adapter's description. */
  adapter: string;
  /** A copy between two device buffers, GB/s. */
  copyGBs: Sampled;
  /** An empty submit to its completion, µs. */
  roundTripUs: Sampled;
}

/**
 * The device's copy bandwidth (`copyBufferToBuffer` of 64 MiB, eight per submit) and the round
 * trip of an empty submit to its completion; undefined where no adapter exists.
 */
export async function deviceLimits(): Promise<DeviceLimits | undefined> {
  let device: GpuDevice;
  try {
    device = await GpuDevice.open();
  } catch {
    return undefined;
  }
  try {
    const gpu = device.device, bytes = 64 * 2 ** 20;
    const usage = GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    const [a, b] = [0, 1].map(() => gpu.createBuffer({ size: bytes, usage }));
    const copies = async () => {
      const encoder = gpu.createCommandEncoder();
      for (let i = 0; i < 8; i++) encoder.copyBufferToBuffer(a, 0, b, 0, bytes);
      gpu.queue.submit([encoder.finish()]);
      await gpu.queue.onSubmittedWorkDone();
      return 8 * bytes;
    };
    const copy = await timeTrials(copies, { trials: 5, trialMs: 100, warmupMs: 100 });
    const empty = async () => {
      gpu.queue.submit([gpu.createCommandEncoder().finish()]);
      await gpu.queue.onSubmittedWorkDone();
      return 1;
    };
    const trips = await timeTrials(empty, { trials: 5, trialMs: 100, warmupMs: 50 });
    a.destroy();
    b.destroy();
    return {
      adapter: device.info.description,
      copyGBs: summarize(copy.map((r) => r / 1e9)),
      roundTripUs: summarize(trips.map((r) => 1e6 / r)),
    };
  } finally {
    device.destroy();
  }
}
