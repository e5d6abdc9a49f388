/**
 * The one measuring harness every primitive goes through (nccl-tests style). Each rank runs
 * {@linkcode measureSweep}: per size it fills exact inputs, warms up, agrees with the other ranks
 * on an iteration count, times the loop after a barrier, counts wrong elements, does the same for
 * the primitive's in-place form, and gathers every rank's numbers to rank 0, which turns them
 * into a {@linkcode ResultRow}.
 * @module
 */

import { pctOfLimit, type RunBounds } from "./limits/machine_limits.ts";
import type { Communicator } from "../core.ts";
import {
  DEVICE_MEMORY,
  DTYPE_INFO,
  pickAlgorithm,
  sideOfMemory,
  sideOfNeed,
  type TransportFacts,
} from "../internal.ts";
import { metrics, percentiles, type ResultRow } from "./metrics.ts";
import {
  type CaseOptions,
  cliName,
  DEFAULT_WINDOW,
  type Primitive,
  PRIMITIVES,
  type SizedCase,
} from "./cases.ts";
import { computeFor } from "./cases/overlap.ts";
import { trafficAt } from "./cases/_traffic.ts";

/** `back-to-back`: one timed loop (nccl-tests); `per-iter`: a barrier before each timed op (OMB). */
export type Timing = "back-to-back" | "per-iter";

/** Timing modes, as the CLI spells them. */
export const TIMINGS: readonly Timing[] = ["back-to-back", "per-iter"];

/** What one sweep measures. */
export interface SweepOptions extends CaseOptions {
  /** The primitive measured. */
  primitive: Primitive;
  /** The transport's name (the rows carry it). */
  transport: string;
  /** Element counts, ascending, each already fitted to the primitive. */
  counts: number[];
  /** Timed iterations per size; adaptive (a time budget per size) when undefined. */
  iters?: number;
  /** Untimed iterations per size; adaptive when undefined. */
  warmup?: number;
  /** How iterations are timed. */
  timing: Timing;
  /** Time budget per size for adaptive iterations, ms. @default {200} */
  budgetMs?: number;
  /** Also time the in-place form where the primitive has one (nccl-tests' second columns). */
  inPlace: boolean;
  /** The machine's limits that bound this run, when measured: rows get their `pct_limit`. */
  bounds?: RunBounds;
}

/** One size's row plus its per-iteration samples (µs). */
export interface SizeResult {
  /** The size's row. */
  row: ResultRow;
  /**
   * `per-iter`: each iteration's time, the slowest rank's. `back-to-back`: the mean time per op of
   * consecutive batches (at most {@linkcode MAX_BATCHES}; one batch when ranks have a device,
   * whose work completes only at the final synchronisation), averaged over ranks, so timestamps
   * never perturb small-message timings.
   */
  samplesUs: number[];
}

/** Most timestamped batches per rank in back-to-back mode. */
export const MAX_BATCHES = 100;
const MIN_ITERS = 2;
const MAX_ITERS = 10_000;
const WARMUP_MS = 50;
/**
 * The first size also warms the code every later size shares, through the JIT's tiers: V8's
 * optimizing compiler runs on threads that compete with polling ranks for cores, and a shorter
 * warm-up left a crowded run's first size slow (docs/measuring.md, "Adaptive iterations").
 */
const FIRST_WARMUP_MS = 3000;

/** What a timed loop reports on one rank. */
interface Timed {
  /** Total time of the operations, µs (touches excluded). */
  totalUs: number;
  samplesUs: number[];
  /** µs per operation the touches took (0 without `--touch`). */
  touchUs: number;
}

/**
 * Measures every size on this rank; calls `options.onResult` on rank 0 after each size and
 * resolves with the wrong elements summed over sizes and ranks (0 on other ranks).
 *
 * Ranks with a device finish every timed loop with `comm.synchronize()` before the last timestamp:
 * calls on device buffers return once their work is enqueued (NCCL's semantics), so the loop
 * times all of it, and `per-iter` times each op to its completion (Deno's ~11 ms floor included).
 */
export async function measureSweep(
  comm: Communicator,
  options: SweepOptions & { onResult?: (result: SizeResult) => void | Promise<void> },
): Promise<number> {
  const onResult = options.onResult ?? (() => {});
  const spec = PRIMITIVES[options.primitive];
  if (options.counts.length === 0) return 0;
  const prepared = spec.prepare(comm, Math.max(...options.counts), options);
  const agreed = new Float64Array(1);
  // Every rank must run the same number of iterations: take the slowest rank's estimate.
  const slowest = async (us: number) => {
    agreed[0] = us;
    await comm.allreduce(agreed, { op: "max" });
    return agreed[0];
  };
  // Every count of calls below follows from values the ranks agreed on (`slowest`), never from
  // one rank's own view: a rank whose calls differ in number would meet a peer's measured call
  // with its bookkeeping. Whether the loops end at a device's completion is agreed too.
  const device = await slowest(comm.gpu ? 1 : 0) > 0;
  const loop = new Loop(comm, device, comm.gpu ? await comm.gpu.completionFloorMs() : 0);
  let wrongTotal = 0;
  try {
    for (const count of options.counts) {
      const sized = checkedUnlessPhantom(comm, prepared.sized(count));
      await sized.fill();
      await comm.barrier();
      await sized.run(); // the cold first op: page faults, scratch, JIT
      let estimate = await slowest(await loop.perOp(sized, 1));
      if (options.warmup !== undefined) {
        const warm = await loop.perOp(sized, options.warmup);
        if (options.warmup > 0 && options.iters === undefined) estimate = await slowest(warm);
      } else {
        const ms = count === options.counts[0] ? FIRST_WARMUP_MS : WARMUP_MS;
        estimate = await warmUp(loop, sized, estimate, ms, slowest);
      }
      const budgetUs = (options.budgetMs ?? 200) * 1e3;
      const iters = options.iters ??
        Math.max(MIN_ITERS, Math.min(MAX_ITERS, Math.round(budgetUs / Math.max(estimate, 0.01))));
      const before = { ...comm.migrations };
      const timed = options.timing === "per-iter"
        ? await loop.perIteration(sized, iters)
        : await loop.backToBack(sized, iters);
      // What the timed calls ran, as the communicator resolved it (before the harness's own
      // collectives below run calls of their own).
      const picked = spec.collective ? comm.lastAlgorithm(spec.collective)! : options.algorithm;
      const moved = [
        comm.migrations.migrations - before.migrations,
        comm.migrations.bytes - before.bytes,
      ];
      const overlap = spec.overlap
        ? await timeOverlap(loop, sized, iters, timed, options, slowest)
        : [NaN, NaN];
      let wrong = await sized.wrong();
      // A skewed alltoallv's balanced run of the same total, timed as an in-place form is.
      const balanced = sized.balanced
        ? await timeInPlace(loop, sized.balanced, iters, options, slowest)
        : [NaN, 0];
      wrong += balanced[1];
      const inPlace = spec.inPlace && options.inPlace
        ? await timeInPlace(
          loop,
          checkedUnlessPhantom(comm, prepared.sized(count, true)),
          iters,
          options,
          slowest,
        )
        : [NaN, NaN];
      const all = await gather(comm, [
        timed.totalUs,
        wrong,
        moved[0] / iters,
        moved[1] / iters,
        timed.touchUs,
        ...inPlace,
        ...overlap,
        balanced[0],
        ...timed.samplesUs,
      ]);
      if (comm.rank !== 0) continue;
      const result = summarize(comm, options, { count, iters, picked }, all);
      // Phantom payloads were not checked (NaN): nothing to add.
      wrongTotal += (result.row.wrong || 0) + (result.row.inplace_wrong || 0);
      await onResult(result);
    }
  } finally {
    prepared.free();
  }
  return wrongTotal;
}

/**
 * `sized` as the harness runs it: on a simulated group with phantom payloads (sized only, their
 * bytes never carried) neither filled nor checked, its wrong elements NaN (not checked).
 */
function checkedUnlessPhantom(comm: Communicator, sized: SizedCase): SizedCase {
  if (comm.simulatedPayload !== "phantom") return sized;
  return {
    fill: () => Promise.resolve(),
    run: () => sized.run(),
    wrong: () => Promise.resolve(NaN),
    ...(sized.touch && { touch: () => sized.touch!() }),
    ...(sized.balanced && { balanced: checkedUnlessPhantom(comm, sized.balanced) }),
  };
}

/**
 * The in-place form at one size, as nccl-tests times it (or another form of the call beside the
 * timed one: a skewed alltoallv's balanced run): warmed up, timed over the out-of-place loop's
 * `iters` (in place, each op works on the last one's output), then refilled and run once for the
 * check. Returns this rank's total µs and wrong elements.
 */
async function timeInPlace(
  loop: Loop,
  sized: SizedCase,
  iters: number,
  options: SweepOptions,
  slowest: (us: number) => Promise<number>,
): Promise<[totalUs: number, wrong: number]> {
  await sized.fill();
  const cold = await slowest(await loop.perOp(sized, 1));
  if (options.warmup !== undefined) await loop.perOp(sized, options.warmup);
  else await warmUp(loop, sized, cold, WARMUP_MS, slowest);
  const timed = options.timing === "per-iter"
    ? await loop.perIteration(sized, iters)
    : await loop.backToBack(sized, iters);
  await sized.fill();
  await loop.perOp(sized, 1);
  return [timed.totalUs, await sized.wrong()];
}

/**
 * An overlap test at one size, as OSU times it: the call with as much computation between issue
 * and await as the slowest rank's pure time per op (`pure`, the loop just timed), warmed up and
 * timed over the same iterations, then the computation alone. Returns this rank's total µs of
 * both.
 */
async function timeOverlap(
  loop: Loop,
  sized: SizedCase,
  iters: number,
  pure: Timed,
  options: SweepOptions,
  slowest: (us: number) => Promise<number>,
): Promise<[overallUs: number, computeUs: number]> {
  const computeUs = await slowest(pure.totalUs / iters);
  const busy = sized.withCompute!(computeUs);
  await loop.perOp(busy, Math.min(iters, 10));
  const overall = options.timing === "per-iter"
    ? await loop.perIteration(busy, iters)
    : await loop.backToBack(busy, iters);
  const start = performance.now();
  for (let i = 0; i < iters; i++) computeFor(computeUs);
  return [overall.totalUs, (performance.now() - start) * 1e3];
}

/**
 * Adaptive warm-up: rounds of doubling length until the slowest rank has spent `ms` in them — the
 * JIT and its compiler threads (which compete with the ranks for cores) settle only after tens to
 * hundreds of milliseconds of small ops, whatever their count. Every rank runs the same rounds,
 * because each round's length follows from times agreed by `slowest`. Ranks with a device run two
 * rounds at least: their first op at a size also builds pipelines and bind groups. Returns the
 * last round's µs per op.
 */
async function warmUp(
  loop: Loop,
  sized: SizedCase,
  coldUs: number,
  ms: number,
  slowest: (us: number) => Promise<number>,
): Promise<number> {
  let perOpUs = coldUs, spentUs = 0;
  for (let n = 1; spentUs + perOpUs < ms * 1e3 || n <= loop.minWarmupRounds; n *= 2) {
    perOpUs = await slowest(await loop.perOp(sized, n));
    spentUs += perOpUs * n;
  }
  return perOpUs;
}

/** The timed loops of one rank; with a device, each ends at the device's completion. */
class Loop {
  readonly #comm: Communicator;
  readonly #device: boolean;
  /** Deno's completion floor on this rank's device, µs (0 without one; subtracted before agreeing). */
  readonly #floorUs: number;

  /** Loops of `comm`'s rank, ending at the device's completion where any rank has one. */
  constructor(comm: Communicator, device: boolean, floorMs: number) {
    this.#comm = comm;
    this.#device = device;
    this.#floorUs = floorMs * 1e3;
  }

  /** Warm-up rounds a size needs at least (see `warmUp`). */
  get minWarmupRounds(): number {
    return this.#device ? 2 : 0;
  }

  /**
   * µs per op of `n` ops back to back (touches included), to their completion; an estimate for
   * iteration counts, so the one completion wait of the loop (~11 ms in Deno) is left out.
   */
  async perOp(sized: SizedCase, n: number): Promise<number> {
    const marks = await this.#batches(sized, n);
    const us = (marks[marks.length - 1] - marks[0]) * 1e3 - this.#floorUs;
    return Math.max(0.01, us / n);
  }

  async backToBack(sized: SizedCase, iters: number): Promise<Timed> {
    const touchUs = await this.#touchCost(sized, iters);
    await this.#comm.barrier();
    const marks = await this.#batches(sized, iters);
    const stride = this.#stride(iters);
    const samplesUs: number[] = [];
    for (let k = 1; k < marks.length; k++) {
      const batch = Math.min(stride, iters - (k - 1) * stride);
      samplesUs.push(((marks[k] - marks[k - 1]) * 1e3) / batch - touchUs);
    }
    const totalUs = (marks[marks.length - 1] - marks[0]) * 1e3 - touchUs * iters;
    return { totalUs, samplesUs, touchUs };
  }

  /** Ops per timestamped batch of an `n`-op loop. */
  #stride(n: number): number {
    // Device work completes only at the end: one batch, not timestamps of enqueues.
    return Math.max(1, this.#device ? n : Math.ceil(n / MAX_BATCHES));
  }

  /**
   * `n` ops back to back in batches, to their completion: the start and each batch's end. Warm-ups
   * run this loop too, so it reaches the JIT's top tier before a timed run (timed from cold, it
   * stalls while V8 optimizes it; docs/measuring.md).
   */
  async #batches(sized: SizedCase, n: number): Promise<Float64Array> {
    const stride = this.#stride(n);
    const marks = new Float64Array(Math.ceil(n / stride) + 1);
    let m = 0;
    marks[m++] = this.#comm.now();
    for (let done = 0; done < n; done += stride) {
      await this.#ops(sized, Math.min(stride, n - done));
      if (done + stride >= n) await this.#complete();
      marks[m++] = this.#comm.now();
    }
    return marks;
  }

  async perIteration(sized: SizedCase, iters: number): Promise<Timed> {
    const samplesUs: number[] = [];
    let touchTotal = 0;
    for (let i = 0; i < iters; i++) {
      await this.#comm.barrier();
      const touched = this.#comm.now();
      if (sized.touch) await sized.touch();
      await this.#complete();
      const start = this.#comm.now();
      touchTotal += start - touched;
      await sized.run();
      await this.#complete();
      samplesUs.push((this.#comm.now() - start) * 1e3);
    }
    const totalUs = samplesUs.reduce((s, t) => s + t, 0);
    return { totalUs, samplesUs, touchUs: (touchTotal * 1e3) / iters };
  }

  /**
   * `n` ops back to back (touches included): the one loop that warm-ups and timed runs share, so
   * the code timed is the code the warm-up took through the JIT's tiers (a loop entered once, in
   * an async function, would run its first thousands of ops unoptimized).
   */
  async #ops(sized: SizedCase, n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      if (sized.touch) await sized.touch(); // no microtask turn when nothing is touched
      await sized.run();
    }
  }

  /**
   * µs per touch, measured alone (`iters` touches, then completion) and subtracted from the
   * loop: what stays in the curve is the migrations the touches cause, not the touches.
   */
  async #touchCost(sized: SizedCase, iters: number): Promise<number> {
    if (!sized.touch) return 0;
    const start = this.#comm.now();
    for (let i = 0; i < iters; i++) await sized.touch();
    await this.#complete();
    return ((this.#comm.now() - start) * 1e3) / iters;
  }

  #complete(): Promise<void> {
    return this.#device ? this.#comm.synchronize() : Promise.resolve();
  }
}

/**
 * Every rank's `values` (same length on every rank), by rank, on rank 0 (other ranks get empty
 * views: they never read them). A gather, not an allgather: on a 1024-rank simulated
 * group the ring's million messages would cost more than the calls measured.
 */
async function gather(comm: Communicator, values: number[]): Promise<Float64Array[]> {
  const mine = Float64Array.from(values);
  const all = new Float64Array(comm.rank === 0 ? mine.length * comm.size : 0);
  await comm.gather(mine, comm.rank === 0 ? all : undefined, { root: 0 });
  return Array.from(
    { length: comm.size },
    (_, r) => all.subarray(r * mine.length, (r + 1) * mine.length),
  );
}

/**
 * Where each value a rank gathers before its samples lies: its total µs, wrong elements,
 * migrations and bytes migrated, touch µs, the in-place form's total µs and wrong (NaN where it
 * was not timed), an overlap test's overall and compute total µs, and a skewed alltoallv's
 * balanced total µs (NaN for the others).
 */
const AT = {
  total: 0,
  wrong: 1,
  migrations: 2,
  migratedBytes: 3,
  touch: 4,
  inPlaceTotal: 5,
  inPlaceWrong: 6,
  overall: 7,
  compute: 8,
  balanced: 9,
} as const;
const HEAD = Object.keys(AT).length;

function summarize(
  comm: Communicator,
  o: SweepOptions,
  { count, iters, picked }: { count: number; iters: number; picked: string },
  perRank: Float64Array[],
): SizeResult {
  const spec = PRIMITIVES[o.primitive];
  const bytes = count * DTYPE_INFO[o.dtype].bytes;
  // Point-to-point rows are per message, their bandwidth every stream's (OSU's figures).
  const flow = spec.flow?.(comm.size, o.window ?? DEFAULT_WINDOW);
  const { messages, streams } = flow ?? { messages: 1, streams: 1 };
  const samples = perRank[0].length - HEAD;
  const samplesUs = Array.from({ length: samples }, (_, k) => {
    const atK = perRank.map((r) => r[HEAD + k]);
    const perOp = o.timing === "per-iter"
      ? Math.max(...atK)
      : atK.reduce((s, t) => s + t, 0) / atK.length;
    return perOp / messages;
  });
  const sum = (k: number) => perRank.reduce((s, r) => s + r[k], 0);
  const measured = (k: number) => ({
    rankTotalsUs: perRank.map((r) => r[k]),
    iters: iters * messages,
    bytes: bytes * streams,
    busFactor: spec.busFactor(comm.size),
  });
  const timesUs = metrics(measured(AT.total));
  const inPlace = Number.isNaN(perRank[0][AT.inPlaceTotal])
    ? undefined
    : metrics(measured(AT.inPlaceTotal));
  // µs per op of a value every rank gathered, the mean over ranks.
  const perOp = (k: number) => sum(k) / (comm.size * iters);
  const row: ResultRow = {
    primitive: cliName(o.primitive),
    transport: o.transport,
    memory: o.memory,
    algorithm: o.algorithm,
    procs: comm.size,
    floats: count,
    bytes,
    iters,
    dtype: o.dtype,
    op: spec.reduces ? o.op : "none",
    root: spec.rooted ? o.root : -1,
    ...timesUs,
    wrong: sum(AT.wrong),
    timing: o.timing,
    ...percentiles(samplesUs),
    picked,
    migrations: sum(AT.migrations),
    migrated_bytes: sum(AT.migratedBytes),
    touch_us: sum(AT.touch) / comm.size,
    threads: comm.threads,
    ...(inPlace && {
      inplace_time_us: inPlace.time_us,
      inplace_gbps: inPlace.gbps,
      inplace_algbw_gbs: inPlace.algbw_gbs,
      inplace_busbw_gbs: inPlace.busbw_gbs,
      inplace_wrong: sum(AT.inPlaceWrong),
    }),
    ...(flow && { msg_rate: (streams / timesUs.time_us) * 1e6 }),
    ...(spec.traffic &&
      trafficColumns(o, comm.size, count, timesUs.time_us, perOp(AT.balanced))),
    ...(spec.overlap &&
      overlapColumns(timesUs.time_us, perOp(AT.overall), perOp(AT.compute))),
  };
  if (o.bounds) row.pct_limit = Number(pctOfLimit(row, o.bounds).toPrecision(3));
  return { row, samplesUs };
}

/**
 * OSU's overlap columns from the mean µs per op of the pure call, the call with computation
 * (overall) and the computation alone: overlap = 100 × (1 − (overall − compute) / pure), from 0
 * (nothing hid) to 100 (the call cost nothing beside the computation).
 */
export function overlapColumns(
  pureUs: number,
  overallUs: number,
  computeUs: number,
): Required<Pick<ResultRow, "overall_us" | "compute_us" | "overlap_pct">> {
  const hidden = 100 * (1 - (overallUs - computeUs) / pureUs);
  return {
    overall_us: overallUs,
    compute_us: computeUs,
    overlap_pct: Math.min(100, Math.max(0, hidden)),
  };
}

/**
 * An alltoallv's traffic columns: the bytes the busiest rank sends or receives, its share against
 * a balanced run's (1: balanced), and where the traffic was skewed, the balanced run of the same
 * total's µs per op and how much slower the skewed one was.
 */
function trafficColumns(
  o: SweepOptions,
  size: number,
  count: number,
  timeUs: number,
  balancedUs: number,
): Pick<ResultRow, "busiest_bytes" | "imbalance" | "balanced_us" | "slowdown"> {
  const bytes = DTYPE_INFO[o.dtype].bytes;
  const busiest = trafficAt(o.traffic, size, count).busiest;
  return {
    busiest_bytes: busiest * bytes,
    imbalance: busiest / Math.max(1, count),
    ...(o.traffic && { balanced_us: balancedUs, slowdown: timeUs / balancedUs }),
  };
}

/** What {@linkcode memoryNeeded} sizes: a primitive on a transport's ranks. */
export interface FootprintQuery
  extends
    Pick<SweepOptions, "primitive" | "memory" | "dtype" | "algorithm" | "window" | "traffic"> {
  /** The transport's facts. */
  facts: TransportFacts;
  procs: number;
  /** Ranks per process of a hierarchical group. @default {1} */
  threads?: number;
  /** The largest count of the sweep. */
  maxCount: number;
  /** Every rank's buffers alias one rank's (a simulated group's phantom payloads). */
  phantom?: boolean;
}

/**
 * Memory a sweep needs at its largest count, for all ranks and per rank heap: the buffers, the
 * scratch of the algorithm it runs there (its descriptor's `scratch`; `auto`'s pick), heap copies
 * of the operands a shared-memory algorithm is given outside the heap, and, for algorithms of
 * messages, a message that may arrive before its receive is posted (held whole until it is).
 */
export function memoryNeeded(
  o: FootprintQuery,
): {
  totalBytes: number;
  heapBytesPerRank: number;
  groupBytes: number;
  largestBufferBytes: number;
} {
  const { procs, maxCount } = o;
  const elementBytes = DTYPE_INFO[o.dtype].bytes;
  const spec = PRIMITIVES[o.primitive];
  const buffers = spec.footprint(maxCount, procs, o) * elementBytes;
  const side = sideOfMemory(o.facts, o.memory);
  const inHeap = o.memory === "shared" || o.memory === "managed";
  // Device memory is counted as host memory too: on CI's software adapter it is.
  const device = DEVICE_MEMORY.includes(o.memory) ? buffers : 0;
  const info = o.facts;
  // Host copies of device buffers staged over a host transport live in the heap.
  const staging = side === "device" && !info.offers.includes("device") ? buffers : 0;
  const algorithm = spec.collective === undefined ? undefined : pickAlgorithm(spec.collective, {
    transport: info,
    bytes: maxCount * elementBytes,
    size: procs,
    side,
    threads: o.threads,
    algorithm: o.algorithm,
  });
  const onHost = algorithm !== undefined && sideOfNeed(algorithm.needs) === "host";
  const scratch = onHost ? (algorithm.scratch?.(maxCount, procs) ?? 0) * elementBytes : 0;
  const bounce = onHost && algorithm.needs === "shared" && !inHeap && staging === 0 ? buffers : 0;
  // A collective without a descriptor (sendrecv, barrier) or one of messages.
  const early = !algorithm || algorithm.needs !== "shared" ? maxCount * elementBytes : 0;
  const heapBytesPerRank = (inHeap ? buffers : 0) + staging + scratch + bounce;
  const groupBytes = procs * info.rankBytes + info.groupBytes(procs);
  const holders = o.phantom ? 1 : procs;
  return {
    totalBytes:
      holders * (heapBytesPerRank + early + (o.memory === "host" ? buffers : 0) + device) +
      groupBytes,
    heapBytesPerRank,
    groupBytes,
    largestBufferBytes: (spec.largestBuffer?.(maxCount, procs, o) ?? maxCount) * elementBytes,
  };
}
