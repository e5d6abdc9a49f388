/**
 * The worker side of the machine's limits (probes.ts): a cache line's round trip through shared
 * memory, a message's round trip between two workers, and one core's copy and reduce loops (a
 * copy into one destination, or into a window of them in turn).
 * Runs in Deno and in a browser tab alike.
 * @module
 */

import { limitsKernels } from "../../kernels/mod.ts";

/** What a probe worker is asked to do. */
export type ProbeTask =
  | {
    kind: "cacheLine";
    /** Two cache lines: the pinger's word at 0, the ponger's at 16 (64 bytes on). */
    lines: SharedArrayBuffer;
    /** The pinger times; the ponger answers until the pinger stores −1. */
    pinger: boolean;
    roundTrips: number;
    trials: number;
  }
  | {
    kind: "postMessage";
    port: MessagePort;
    pinger: boolean;
    roundTrips: number;
    trials: number;
  }
  | {
    kind: "bandwidth";
    op: "copy" | "reduce";
    /** Destination blocks a copy writes in turn, one per copy (a stream's window of receives). */
    blocks: number;
    /** Buffer sizes, bytes, in order. */
    sizes: number[];
    trials: number;
    trialMs: number;
    /** Time to run before the first size: the JIT's tiers take WebAssembly up in ~0.3 s. */
    warmupMs: number;
    /** Workers measuring at once: each size starts when all have arrived (word 0 counts). */
    workers: number;
    arrivals: SharedArrayBuffer;
  };

/** Per trial: µs per round trip (round trips), or, per size, bytes per second (bandwidth). */
export type ProbeAnswer = number[] | number[][];

const scope = self as unknown as {
  onmessage: (e: MessageEvent<ProbeTask>) => void;
  postMessage(answer: ProbeAnswer | { error: string }): void;
};

scope.onmessage = async ({ data }) => {
  try {
    scope.postMessage(
      data.kind === "cacheLine"
        ? cacheLine(data)
        : data.kind === "postMessage"
        ? await postMessages(data)
        : bandwidth(data),
    );
  } catch (e) {
    scope.postMessage({ error: String(e) });
  }
};

const PONG = 16;

/** One side of a cache line's ping-pong: each round trip is a store seen and answered. */
function cacheLine(t: Extract<ProbeTask, { kind: "cacheLine" }>): ProbeAnswer {
  const words = new Int32Array(t.lines);
  if (!t.pinger) {
    for (let seen = 0;;) {
      const ping = Atomics.load(words, 0);
      if (ping === -1) return [];
      if (ping !== seen) Atomics.store(words, PONG, seen = ping);
    }
  }
  let seq = 0;
  const trip = () => {
    Atomics.store(words, 0, ++seq);
    while (Atomics.load(words, PONG) !== seq) { /* spin */ }
  };
  for (let i = 0; i < t.roundTrips; i++) trip(); // warm-up: the JIT's tiers
  const perTrial: number[] = [];
  for (let k = 0; k < t.trials; k++) {
    const start = performance.now();
    for (let i = 0; i < t.roundTrips; i++) trip();
    perTrial.push((performance.now() - start) * 1000 / t.roundTrips);
  }
  Atomics.store(words, 0, -1);
  return perTrial;
}

/** One side of a message ping-pong over a MessageChannel between two workers. */
async function postMessages(t: Extract<ProbeTask, { kind: "postMessage" }>): Promise<ProbeAnswer> {
  const { port } = t;
  let answer: ((v: number) => void) | undefined;
  port.onmessage = ({ data }: MessageEvent<number>) => {
    if (!t.pinger) {
      if (data === -1) answer?.(0);
      else port.postMessage(data);
    } else answer?.(data);
  };
  const next = () => new Promise<number>((resolve) => answer = resolve);
  if (!t.pinger) {
    await next();
    port.close();
    return [];
  }
  const trip = async (i: number) => {
    const reply = next();
    port.postMessage(i);
    await reply;
  };
  for (let i = 0; i < t.roundTrips; i++) await trip(i);
  const perTrial: number[] = [];
  for (let k = 0; k < t.trials; k++) {
    const start = performance.now();
    for (let i = 0; i < t.roundTrips; i++) await trip(i);
    perTrial.push((performance.now() - start) * 1000 / t.roundTrips);
  }
  port.postMessage(-1);
  port.close();
  return perTrial;
}

/**
 * One core's copy (`memory.copy`) or reduce (a SIMD add: read two, write one) over each size in
 * its own WebAssembly memory: bytes of output per second, per size and trial. A copy writes its
 * `blocks` destinations in turn. Every size starts when all the probe's workers have arrived at
 * it, so all cores run at once.
 */
function bandwidth(t: Extract<ProbeTask, { kind: "bandwidth" }>): number[][] {
  const most = Math.max(...t.sizes);
  const pages = Math.ceil(((2 + t.blocks) * most + 64) / 65536);
  const memory = new WebAssembly.Memory({ initial: pages, maximum: pages, shared: true });
  const kernels = limitsKernels(memory);
  // The sources first, then the destinations: block j of a size at d + j × size.
  const [a, b, d] = [64, 64 + most, 64 + 2 * most];
  new Float32Array(memory.buffer).fill(1); // every page touched before timing
  const arrivals = new Int32Array(t.arrivals);
  const perSize: number[][] = [];
  for (const [g, bytes] of t.sizes.entries()) {
    // Small sizes run in batches between clock readings, which cost as much as a 4 KiB copy.
    const batch = Math.max(1, Math.floor(2 ** 20 / bytes));
    let block = 0;
    const op = t.op === "copy"
      ? () => {
        for (let i = 0; i < batch; i++) {
          kernels.copy(d + block * bytes, a, bytes);
          if (++block === t.blocks) block = 0;
        }
      }
      : () => {
        for (let i = 0; i < batch; i++) kernels.add(d, a, b, bytes / 4);
      };
    const warm = performance.now() + (g === 0 ? t.warmupMs : t.trialMs);
    while (performance.now() < warm) op();
    arrive(arrivals, t.workers * (g + 1));
    const perTrial: number[] = [];
    for (let k = 0; k < t.trials; k++) {
      let done = 0;
      const start = performance.now();
      let now = start;
      while (now - start < t.trialMs) {
        op();
        done += batch;
        now = performance.now();
      }
      perTrial.push(done * bytes / ((now - start) / 1000));
    }
    perSize.push(perTrial);
  }
  return perSize;
}

/** Counts this worker in and waits until `target` have arrived. */
function arrive(arrivals: Int32Array, target: number): void {
  if (Atomics.add(arrivals, 0, 1) + 1 >= target) Atomics.notify(arrivals, 0);
  for (let seen = Atomics.load(arrivals, 0); seen < target; seen = Atomics.load(arrivals, 0)) {
    Atomics.wait(arrivals, 0, seen);
  }
}
