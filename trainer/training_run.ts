/**
 * A training run on one rank, in any runtime: builds the engine, runs the strategy epoch by epoch,
 * evaluates on the test set (sharded over ranks), and aggregates every epoch's scores and time
 * split over ranks; rank 0 reports to its runtime's observer. With checkpoints (Deno's:
 * deno/files/checkpoint.ts) it writes them as it goes and, with `resume`, first goes back to
 * the last one. Deno's rank program is scripts/train/cli_train_rank.ts.
 * @module
 */

import type { Communicator, HostBuffer } from "../core.ts";
import { simdPeakGflops } from "../internal.ts";
import { HalfPrecisionHook } from "./sync/compression.ts";
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
import { type StepState, Stopwatch, type Strategy, type StrategyContext } from "./sync/strategy.ts";

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
    { meta: RunPosition & { rows: EpochRow[] }; score: Score; epochMs: number } | undefined
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
  /** Rank 0's observer of the run (other ranks: none). */
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
  };
  return config.device === "gpu"
    ? await GpuEngine.create(comm, layout, options)
    : new CpuEngine(comm, layout, options);
}

/** Trains on this rank with `io.config`, as `io` gives the data and takes the results. */
export async function train(comm: Communicator, io: TrainIo): Promise<TrainRankResult> {
  const { config } = io;
  const mnist = io.data;
  const trainSet = firstRows(mnist.train, config.trainSamples);
  const test = firstRows(mnist.test, config.testSamples);
  const layout = new MlpLayout(config.layers);
  const strategy = STRATEGIES[config.sync];
  const evalRows = Math.max(config.batch, EVAL_ROWS);
  const engine = await createEngine(comm, config, mnist, evalRows);
  const reporter = comm.rank === 0 ? io.observer : undefined;
  const runningLoss = () => {
    const score = engine.runningScore?.();
    return score?.rows ? score.loss / score.rows : undefined;
  };
  const halfPrecision = config.gradDtype === "f32" ? undefined : new HalfPrecisionHook(
    comm,
    config.gradDtype,
    engine.grads.comm.length,
    engine.grads.comm.memory as "host" | "shared",
    config.errorFeedback,
  );
  const checkpointer = io.checkpoints?.(engine, halfPrecision?.residual);
  const rows: EpochRow[] = [];
  let epoch = 0;
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
    allreduceCalls: 0,
    halfPrecision,
  };
  try {
    reporter?.start();
    if (comm.rank === 0) await engine.initParams(config.seed);
    await strategy.start(ctx);
    const computing = strategy.computing(comm.size).length;
    let first = { epoch: 0, step: 0 };
    const epochSteps = Math.floor(trainSet.count / (config.batch * computing));
    const replicatedAt = (step: number) =>
      comm.size === 1 || strategy.replicatedAfter(step, epochSteps, config);
    const resumed = config.resume ? await checkpointer?.load(config, replicatedAt) : undefined;
    if (resumed && resumed.meta.step >= epochSteps) {
      throw new RangeError(
        `the checkpoint's position, step ${resumed.meta.step} of epoch ${
          resumed.meta.epoch + 1
        }, ` +
          `is past the ${epochSteps} steps of an epoch of this run`,
      );
    }
    if (resumed) {
      first = resumed.meta;
      engine.addTrainScore?.(resumed.score);
      for (const row of resumed.meta.rows) {
        rows.push(row);
        reporter?.add(row);
      }
      reporter?.note(
        `resumed from ${config.checkpoint!.dir} at epoch ${first.epoch + 1}, step ${first.step}`,
      );
    }
    const totals = comm.alloc(8, { dtype: "f64", memory: "host" }) as HostBuffer<Float64Array>;
    const mine = comm.alloc(4, { dtype: "f64", memory: "host" }) as HostBuffer<Float64Array>;
    const all = comm.alloc(4 * comm.size, { dtype: "f64", memory: "host" }) as HostBuffer<
      Float64Array
    >;
    let perStep = { compute: 0, comm: 0, wait: 0 }, steps = 0, macs = 0;
    for (epoch = first.epoch; epoch < config.epochs; epoch++) {
      ctx.firstStep = epoch === first.epoch ? first.step : 0;
      ctx.staleness = { pushes: 0, total: 0, max: 0 };
      await comm.barrier();
      ctx.watch.reset();
      // A resumed epoch's time covers it whole: the part before the checkpoint counts too.
      const carried = epoch === first.epoch ? resumed?.epochMs ?? 0 : 0;
      checkpointer?.startEpoch(carried);
      const start = performance.now() - carried;
      await strategy.epoch(ctx, epoch);
      await engine.synchronize();
      ctx.watch.lap("compute");
      const time = performance.now() - start;
      await evaluate(comm, engine, test, evalRows);
      const { train: t, eval: e } = await engine.takeScores();
      totals.view.set([
        t.loss,
        t.correct,
        t.rows,
        e.loss,
        e.correct,
        e.rows,
        ctx.staleness.pushes,
        ctx.staleness.total,
      ]);
      await comm.allreduce(totals, { op: "sum" });
      mine.view.set([time, ctx.watch.compute, ctx.watch.comm, ctx.staleness.max]);
      await comm.allgather(mine, all);
      const [loss, correct, seen, testLoss, testCorrect, tested, pushes, stale] = totals.view;
      const per = (i: number) => Array.from({ length: comm.size }, (_, r) => all.view[4 * r + i]);
      const commTimes = per(2), fastest = Math.min(...commTimes);
      const row: EpochRow = {
        epoch: epoch + 1,
        time_s: Math.max(...per(0)) / 1000,
        compute_s: Math.max(...per(1)) / 1000,
        comm_s: Math.max(...commTimes) / 1000,
        wait_s: Math.max(...commTimes.map((c) => c - fastest)) / 1000,
        loss: loss / seen,
        train_acc: correct / seen,
        test_acc: testCorrect / tested,
        test_loss: testLoss / tested,
        samples_per_s: seen / (Math.max(...per(0)) / 1000),
        ...(config.sync === "ps" && config.psMode === "async"
          ? { staleness_mean: pushes > 0 ? stale / pushes : 0, staleness_max: Math.max(...per(3)) }
          : {}),
      };
      if (!Number.isFinite(row.loss)) {
        // Every rank sees the same sums: all stop here, before a checkpoint keeps the state.
        throw new RangeError(
          `the training loss is ${row.loss} after epoch ${epoch + 1}: the run diverged ` +
            `(a lower --lr may help)`,
        );
      }
      rows.push(row);
      reporter?.add(row);
      await checkpointer?.afterEpoch(epoch, rows);
      const epochSteps = seen / (computing * config.batch);
      steps += epochSteps;
      perStep = {
        compute: perStep.compute + row.compute_s * 1000,
        comm: perStep.comm + row.comm_s * 1000,
        wait: perStep.wait + row.wait_s * 1000,
      };
      macs += layout.trainMacs * seen / computing;
    }
    const computeS = rows.reduce((s, r) => s + r.compute_s, 0);
    const summary: TrainSummary = {
      epochs: rows,
      train_s: rows.reduce((s, r) => s + r.time_s, 0),
      final_test_acc: rows.at(-1)?.test_acc ?? 0,
      step_ms: {
        compute: perStep.compute / Math.max(steps, 1),
        comm: perStep.comm / Math.max(steps, 1),
        wait: perStep.wait / Math.max(steps, 1),
      },
      gflops_per_rank: computeS > 0 ? (2 * macs) / computeS / 1e9 : 0,
      // In the same sitting as the training it is read against.
      peak_gflops: engine.device === "cpu" && comm.rank === 0 ? simdPeakGflops() : undefined,
      kernels: engine.kernels,
      allreduce_calls: ctx.allreduceCalls,
    };
    reporter?.finish(summary);
    const params = io.returnParams ? await readParams(engine) : undefined;
    return { summary: comm.rank === 0 ? summary : undefined, params };
  } finally {
    halfPrecision?.dispose();
    engine.dispose();
  }
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
