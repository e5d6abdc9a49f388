/**
 * A training run on one rank, in any runtime: builds the engine, runs the strategy epoch by epoch,
 * evaluates on the test set (sharded over ranks), and aggregates every epoch's scores and time
 * split over ranks; a rank given an observer (rank 0; a tab's rank too) reports to it. With checkpoints (Deno's:
 * deno/files/checkpoint.ts) it writes them as it goes and, with `resume`, first goes back to
 * the last one. Deno's rank program is scripts/train/cli_train_rank.ts.
 * @module
 */

import type { Communicator } from "../core.ts";
import { simdPeakGflops } from "../kernels/mod.ts";
import { HalfPrecisionHook } from "./sync/compression.ts";
import { ReproducibleGradients } from "./sync/reproducible.ts";
import type { TrainConfig } from "./config.ts";
import { CpuEngine } from "./cpu_engine.ts";
import type { Engine, Score } from "./engine.ts";
import { GpuEngine } from "./gpu_engine.ts";
import type { ImageSet, Mnist } from "./mnist.ts";
import { MlpLayout } from "./model.ts";
import type { EpochRow, TrainObserver, TrainSummary } from "./epochs.ts";
import { allreduceStrategy } from "./sync/allreduce.ts";
import { localSgdStrategy } from "./sync/local_sgd.ts";
import { psStrategy } from "./sync/ps.ts";
import {
  NO_OVERLAP,
  type Overlap,
  type StepState,
  Stopwatch,
  type Strategy,
  type StrategyContext,
} from "./sync/strategy.ts";

/** Strategies by name. */
export const STRATEGIES: Record<TrainConfig["sync"], Strategy> = {
  "allreduce": allreduceStrategy,
  "local-sgd": localSgdStrategy,
  "ps": psStrategy,
};

/** Rows per evaluation batch. */
const EVAL_ROWS = 500;

/** Where a run stands: `step` steps of epoch `epoch` done (0: the epoch has not begun). */
export interface RunPosition {
  /** The epoch, from 0. */
  epoch: number;
  /** Steps of it done. */
  step: number;
}

/** A run's checkpoints, as the training loop uses them (every rank calls each collectively). */
export interface RunCheckpoints {
  /**
   * The last checkpoint loaded into the engine, if there is one; `replicatedAt(step)` says
   * whether every rank held the same parameters at a position `step` steps into an epoch (the
   * strategy's rule), so the ranks' files must agree there.
   */
  load(
    config: TrainConfig,
    replicatedAt: (step: number) => boolean,
  ): Promise<
    | { meta: RunPosition & { rows: EpochRow[]; files: unknown[] }; score: Score; epochMs: number }
    | undefined
  >;
  /** An epoch's loop starts now, `carriedMs` into it (a resumed epoch's time before the resume). */
  startEpoch(carriedMs?: number): void;
  /** After a step of an epoch of `steps`: writes a checkpoint when one is due. */
  afterStep(
    position: RunPosition,
    steps: number,
    state: StepState,
    rows: EpochRow[],
  ): Promise<void> | undefined;
  /** After an epoch. */
  afterEpoch(epoch: number, rows: EpochRow[]): Promise<void>;
}

/** What a rank's runtime gives a training run. */
export interface TrainIo {
  /** The run's settings (the same on every rank). */
  config: TrainConfig;
  /** The data. */
  data: Mnist;
  /** This rank's observer of the run, if it reports (rank 0 does, and a tab's rank to its page). */
  observer?: TrainObserver;
  /**
   * The run's checkpoints over `engine`, with `extra` state beside its parameters (the gradient
   * hook's error-feedback residual), when the run keeps them.
   */
  checkpoints?(engine: Engine, extra?: Float32Array): RunCheckpoints;
  /** Return the parameters (tests compare them). @default {false} */
  returnParams?: boolean;
}

/** What a rank returns: rank 0's summary (others: undefined), and its parameters if asked. */
export interface TrainRankResult {
  /** Rank 0's summary of the run (other ranks: none). */
  summary?: TrainSummary;
  /** The rank's final parameters, when asked for. */
  params?: number[];
}

function firstRows(set: ImageSet, n: number | undefined): ImageSet {
  if (n === undefined || n >= set.count) return set;
  return {
    images: set.images.subarray(0, n * set.pixels),
    labels: set.labels.subarray(0, n),
    count: n,
    pixels: set.pixels,
    memory: set.memory,
  };
}

/** The engine a run's config asks for, with batches of up to `rows` rows. */
export async function createEngine(
  comm: Communicator,
  config: TrainConfig,
  mnist: Mnist,
  rows: number,
): Promise<Engine> {
  const layout = new MlpLayout(config.layers);
  const options = {
    data: mnist.train.memory,
    activation: config.activation,
    rows,
    lr: config.lr,
    momentum: config.momentum,
    memory: config.memory,
    reproducible: config.reproducible,
  };
  return config.device === "gpu"
    ? await GpuEngine.create(comm, layout, options)
    : new CpuEngine(comm, layout, options);
}

/** What every rank adds up after an epoch, in this order (one allreduce of the record). */
const EPOCH_SUMS = [
  "loss",
  "correct",
  "seen",
  "testLoss",
  "testCorrect",
  "tested",
  "pushes",
  "stale",
  "overlappedMs",
  "aloneMs",
] as const;
/** What rank 0 hears of every rank after an epoch, in this order (one allgather). */
const EPOCH_PER_RANK = ["timeMs", "computeMs", "commMs", "staleMax"] as const;

/** A record of figures named by `K`. */
type Figures<K extends readonly string[]> = Record<K[number], number>;
/** An epoch's sums over ranks. */
type EpochSums = Figures<typeof EPOCH_SUMS>;
/** One rank's figures of an epoch. */
type RankFigures = Figures<typeof EPOCH_PER_RANK>;

/** A record's fields, in `order`, as the words of a collective's buffer, and back. */
function packed<K extends readonly string[]>(order: K, record: Figures<K>): number[] {
  return order.map((k) => record[k as K[number]]);
}
function unpacked<K extends readonly string[]>(order: K, words: ArrayLike<number>): Figures<K> {
  return Object.fromEntries(order.map((k, i) => [k, words[i]])) as Figures<K>;
}

/** One rank's run: its engine, strategy, data, checkpoints and observer, and what they share. */
interface RankRun {
  comm: Communicator;
  config: TrainConfig;
  engine: Engine;
  strategy: Strategy;
  ctx: StrategyContext;
  test: ImageSet;
  evalRows: number;
  reporter?: TrainObserver;
  checkpointer?: RunCheckpoints;
  /** Finished epochs' rows (a resumed run's first). */
  rows: EpochRow[];
  /** Steps of one epoch on a computing rank. */
  epochSteps: number;
}

/** Trains on this rank with `io.config`, as `io` gives the data and takes the results. */
export async function train(comm: Communicator, io: TrainIo): Promise<TrainRankResult> {
  const { config } = io;
  const trainSet = firstRows(io.data.train, config.trainSamples);
  const strategy = STRATEGIES[config.sync];
  const evalRows = Math.max(config.batch, EVAL_ROWS);
  const engine = await createEngine(comm, config, io.data, evalRows);
  const reporter = io.observer;
  const halfPrecision = config.gradDtype === "f32" ? undefined : new HalfPrecisionHook(
    comm,
    config.gradDtype,
    engine.grads.comm.length,
    engine.grads.comm.memory as "host" | "shared",
    config.errorFeedback,
  );
  const reproducible = config.reproducible && engine instanceof CpuEngine
    ? new ReproducibleGradients(comm, engine.model)
    : undefined;
  const checkpointer = io.checkpoints?.(engine, halfPrecision?.residual);
  const rows: EpochRow[] = [];
  let epoch = 0;
  const runningLoss = () => {
    const score = engine.runningScore?.();
    return score?.rows ? score.loss / score.rows : undefined;
  };
  const ctx: StrategyContext = {
    comm,
    engine,
    train: trainSet,
    options: config,
    watch: new Stopwatch(),
    firstStep: 0,
    stepDone: (step, steps, state) => checkpointer?.afterStep({ epoch, step }, steps, state, rows),
    progress: (step, steps) => reporter?.progress(epoch, step, steps, runningLoss),
    staleness: { pushes: 0, total: 0, max: 0 },
    overlap: { ...NO_OVERLAP },
    allreduceCalls: 0,
    halfPrecision,
    reproducible,
  };
  const computing = strategy.computing(comm.size).length;
  const run: RankRun = {
    comm,
    config,
    engine,
    strategy,
    ctx,
    test: firstRows(io.data.test, config.testSamples),
    evalRows,
    reporter,
    checkpointer,
    rows,
    epochSteps: Math.floor(trainSet.count / (config.batch * computing)),
  };
  try {
    reporter?.start();
    if (comm.rank === 0) await engine.initParams(config.seed);
    await strategy.start(ctx);
    const resumed = await resume(run);
    for (epoch = resumed.epoch; epoch < config.epochs; epoch++) {
      const carried = epoch === resumed.epoch ? resumed.epochMs : 0;
      ctx.firstStep = epoch === resumed.epoch ? resumed.step : 0;
      const timeMs = await trainEpoch(run, epoch, carried);
      await evaluate(comm, engine, run.test, evalRows);
      const row = await epochRow(run, epoch, timeMs);
      rows.push(row);
      reporter?.add(row);
      await checkpointer?.afterEpoch(epoch, rows);
    }
    const summary = summarize(run);
    reporter?.finish(summary);
    const params = io.returnParams ? await readParams(engine) : undefined;
    return { summary: comm.rank === 0 ? summary : undefined, params };
  } finally {
    halfPrecision?.dispose();
    reproducible?.dispose();
    engine.dispose();
  }
}

/**
 * Goes back to the last checkpoint when the run resumes: the engine loaded, the finished epochs'
 * rows kept; returns where the run goes on from (the start, when it does not resume).
 */
async function resume(run: RankRun): Promise<RunPosition & { epochMs: number }> {
  const { comm, config, strategy, engine, reporter } = run;
  if (!config.resume || !run.checkpointer) return { epoch: 0, step: 0, epochMs: 0 };
  const replicatedAt = (step: number) =>
    comm.size === 1 || strategy.replicatedAfter(step, run.epochSteps, config);
  const resumed = await run.checkpointer.load(config, replicatedAt);
  if (!resumed) return { epoch: 0, step: 0, epochMs: 0 };
  const { epoch, step } = resumed.meta;
  if (step >= run.epochSteps) {
    throw new RangeError(
      `the checkpoint's position, step ${step} of epoch ${epoch + 1}, is past the ` +
        `${run.epochSteps} steps of an epoch of this run`,
    );
  }
  engine.addTrainScore?.(resumed.score);
  for (const row of resumed.meta.rows) {
    run.rows.push(row);
    reporter?.add(row);
  }
  const written = resumed.meta.files.length;
  reporter?.note(
    `resumed from ${config.checkpoint!.dir} at epoch ${epoch + 1}, step ${step}` +
      (written === comm.size
        ? ""
        : ` (written by ${written} ranks: they held one replica, which ${comm.size} ranks go on from)`),
  );
  return { epoch, step, epochMs: resumed.epochMs };
}

/**
 * Trains epoch `epoch` (`carriedMs` of it ran before a resume: a resumed epoch's time covers it
 * whole); resolves with its ms on this rank.
 */
async function trainEpoch(run: RankRun, epoch: number, carriedMs: number): Promise<number> {
  const { comm, ctx, engine } = run;
  ctx.staleness = { pushes: 0, total: 0, max: 0 };
  ctx.overlap = { ...NO_OVERLAP };
  await comm.barrier();
  ctx.watch.reset();
  run.checkpointer?.startEpoch(carriedMs);
  const start = performance.now() - carriedMs;
  await run.strategy.epoch(ctx, epoch);
  await engine.synchronize();
  ctx.watch.lap("compute");
  return performance.now() - start;
}

/**
 * Epoch `epoch`'s row: its scores summed over ranks (one allreduce) and every rank's time split
 * (one allgather); a loss that is not finite stops every rank alike, before a checkpoint keeps it.
 */
async function epochRow(run: RankRun, epoch: number, timeMs: number): Promise<EpochRow> {
  const { comm, ctx, config } = run;
  const { train: t, eval: e } = await run.engine.takeScores();
  const sums = Float64Array.from(packed(EPOCH_SUMS, {
    loss: t.loss,
    correct: t.correct,
    seen: t.rows,
    testLoss: e.loss,
    testCorrect: e.correct,
    tested: e.rows,
    pushes: ctx.staleness.pushes,
    stale: ctx.staleness.total,
    overlappedMs: ctx.overlap.overlappedMs,
    aloneMs: ctx.overlap.aloneMs,
  }));
  await comm.allreduce(sums, { op: "sum" });
  const s: EpochSums = unpacked(EPOCH_SUMS, sums);
  const mine = Float64Array.from(packed(EPOCH_PER_RANK, {
    timeMs,
    computeMs: ctx.watch.compute,
    commMs: ctx.watch.comm,
    staleMax: ctx.staleness.max,
  }));
  const all = new Float64Array(mine.length * comm.size);
  await comm.allgather(mine, all);
  const ranks: RankFigures[] = Array.from(
    { length: comm.size },
    (_, r) => unpacked(EPOCH_PER_RANK, all.subarray(r * mine.length, (r + 1) * mine.length)),
  );
  const most = (k: keyof RankFigures) => Math.max(...ranks.map((f) => f[k]));
  const fastestComm = Math.min(...ranks.map((f) => f.commMs));
  const row: EpochRow = {
    epoch: epoch + 1,
    time_s: most("timeMs") / 1000,
    compute_s: most("computeMs") / 1000,
    comm_s: most("commMs") / 1000,
    wait_s: Math.max(...ranks.map((f) => f.commMs - fastestComm)) / 1000,
    loss: s.loss / s.seen,
    train_acc: s.correct / s.seen,
    test_acc: s.testCorrect / s.tested,
    test_loss: s.testLoss / s.tested,
    samples_per_s: s.seen / (most("timeMs") / 1000),
    ...(config.sync === "ps" && config.psMode === "async"
      ? { staleness_mean: s.pushes > 0 ? s.stale / s.pushes : 0, staleness_max: most("staleMax") }
      : {}),
    ...hiddenShare(s, ctx.overlap),
  };
  if (!Number.isFinite(row.loss)) {
    throw new RangeError(
      `the training loss is ${row.loss} after epoch ${epoch + 1}: the run diverged ` +
        `(a lower --lr may help)`,
    );
  }
  return row;
}

/**
 * OSU's overlap of an epoch's sync steps, every rank's together (each rank makes as many):
 * 100 × (1 − communication of an overlapped step / of a step reduced alone), from 0 to 100;
 * nothing without both kinds of step.
 */
function hiddenShare(s: EpochSums, { overlapped, alone }: Overlap): Partial<EpochRow> {
  if (overlapped === 0 || alone === 0 || s.aloneMs <= 0) return {};
  const exposed = (s.overlappedMs / overlapped) / (s.aloneMs / alone);
  return { hidden_pct: 100 * Math.min(1, Math.max(0, 1 - exposed)) };
}

/** The run's summary from its rows (rank 0 reports it). */
function summarize(run: RankRun): TrainSummary {
  const { rows, config, engine, comm, ctx } = run;
  const computing = run.strategy.computing(comm.size).length;
  const layout = new MlpLayout(config.layers);
  let steps = 0, macs = 0;
  const per = { compute: 0, comm: 0, wait: 0 };
  for (const row of rows) {
    const seen = row.samples_per_s * row.time_s;
    steps += seen / (computing * config.batch);
    per.compute += row.compute_s * 1000;
    per.comm += row.comm_s * 1000;
    per.wait += row.wait_s * 1000;
    macs += layout.trainMacs * seen / computing;
  }
  const computeS = rows.reduce((s, r) => s + r.compute_s, 0);
  const perStep = (ms: number) => ms / Math.max(steps, 1);
  return {
    epochs: rows,
    train_s: rows.reduce((s, r) => s + r.time_s, 0),
    final_test_acc: rows.at(-1)?.test_acc ?? 0,
    step_ms: { compute: perStep(per.compute), comm: perStep(per.comm), wait: perStep(per.wait) },
    gflops_per_rank: computeS > 0 ? (2 * macs) / computeS / 1e9 : 0,
    // In the same sitting as the training it is read against.
    peak_gflops: engine.device === "cpu" && comm.rank === 0 ? simdPeakGflops() : undefined,
    kernels: engine.kernels,
    allreduce_calls: ctx.allreduceCalls,
    ...meanHidden(rows),
  };
}

/** The mean of the rows' `hidden_pct`, where any has one. */
function meanHidden(rows: EpochRow[]): Pick<TrainSummary, "hidden_pct"> {
  const hidden = rows.flatMap((r) => r.hidden_pct === undefined ? [] : [r.hidden_pct]);
  return hidden.length === 0 ? {} : { hidden_pct: hidden.reduce((a, b) => a + b) / hidden.length };
}

/** Scores the test set, rank r taking rows r, r + R, …, in batches. */
async function evaluate(comm: Communicator, engine: Engine, test: ImageSet, rows: number) {
  const mine = Array.from(
    { length: Math.ceil((test.count - comm.rank) / comm.size) },
    (_, i) => comm.rank + i * comm.size,
  );
  for (let i = 0; i < mine.length; i += rows) {
    engine.load(test, mine.slice(i, i + rows));
    engine.evaluate();
  }
  await engine.synchronize();
}

async function readParams(engine: Engine): Promise<number[]> {
  const out = new Float32Array(engine.params.local.length);
  await engine.params.local.read(out);
  return Array.from(out);
}
