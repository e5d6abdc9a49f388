/**
 * Checkpoints: what a run needs to go on as if it had never stopped — every rank's parameters,
 * optimizer state (momentum) and running training score, where the run stands (epoch, step: the
 * data order follows from the seed and the epoch), and the finished epochs' rows — kept in one
 * folder. Each rank writes its own file, then rank 0 commits the set by renaming
 * `checkpoint.json` into place, naming the files' generation; a crash at any moment leaves the
 * previous set whole.
 * @module
 */

import type { Communicator } from "../../web.ts";
import type { CheckpointOptions, TrainConfig } from "../../trainer/config.ts";
import type { Engine, Score } from "../../trainer/engine.ts";
import type { EpochRow } from "../../trainer/epochs.ts";
import type { RunCheckpoints, RunPosition } from "../../trainer/rank.ts";

/** The committed set: `checkpoint.json`. */
export interface CheckpointMeta extends RunPosition {
  /** The format's version. */
  format: 1;
  /** Which generation of rank files the set names. */
  generation: number;
  /** The settings that decide the arithmetic; a resumed run must match them. */
  fingerprint: Record<string, unknown>;
  /** The finished epochs' rows. */
  rows: EpochRow[];
}

const META = "checkpoint.json";
const rankFile = (generation: number, rank: number) => `rank-${rank}.g${generation}.bin`;

/** The settings a checkpoint holds a run to: everything that changes the arithmetic. */
export function fingerprintOf(c: TrainConfig): Record<string, unknown> {
  return {
    procs: c.procs,
    sync: c.sync,
    syncEvery: c.syncEvery,
    psMode: c.psMode,
    gradDtype: c.gradDtype,
    errorFeedback: c.errorFeedback,
    batch: c.batch,
    lr: c.lr,
    momentum: c.momentum,
    layers: c.layers.join(","),
    activation: c.activation,
    device: c.device,
    seed: c.seed,
    trainSamples: c.trainSamples ?? null,
    testSamples: c.testSamples ?? null,
  };
}

/**
 * The checkpoint in `dir`, or why a run with `config` cannot resume from it (one line), or
 * `undefined` when there is none.
 */
export function readCheckpoint(
  dir: string,
  config: TrainConfig,
): CheckpointMeta | string | undefined {
  let text: string;
  try {
    text = Deno.readTextFileSync(`${dir}/${META}`);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    return `cannot read ${dir}/${META}: ${(e as Error).message}`;
  }
  let meta: CheckpointMeta;
  try {
    meta = JSON.parse(text);
  } catch {
    return `${dir}/${META} is not a checkpoint (not JSON)`;
  }
  if (meta?.format !== 1 || !Number.isInteger(meta.generation) || !Array.isArray(meta.rows)) {
    return `${dir}/${META} is not a checkpoint of this version`;
  }
  const want = fingerprintOf(config);
  const differ = Object.keys(want).filter((k) =>
    JSON.stringify(want[k]) !== JSON.stringify(meta.fingerprint?.[k])
  );
  if (differ.length > 0) {
    const k = differ[0];
    return `${dir} holds a run with ${k} ${JSON.stringify(meta.fingerprint?.[k])}; this run ` +
      `has ${JSON.stringify(want[k])} (resume with the same settings)`;
  }
  if (meta.epoch > config.epochs) {
    return `${dir} holds a run ${meta.epoch} epochs in; this run has --epochs ${config.epochs}`;
  }
  return meta;
}

/** One rank's side of a run's checkpoints. */
export class Checkpointer implements RunCheckpoints {
  readonly #comm: Communicator;
  readonly #engine: Engine;
  readonly #o: CheckpointOptions;
  readonly #fingerprint: Record<string, unknown>;
  #generation = 0;
  /** Steps since the last checkpoint. */
  #steps = 0;

  readonly #extra: Float32Array;

  /**
   * Checkpoints of `engine`'s parameters and optimizer state, and `extra` state beside them (the
   * gradient hook's error-feedback residual).
   */
  constructor(
    comm: Communicator,
    engine: Engine,
    options: CheckpointOptions,
    config: TrainConfig,
    extra: Float32Array = new Float32Array(0),
  ) {
    this.#comm = comm;
    this.#engine = engine;
    this.#o = options;
    this.#fingerprint = fingerprintOf(config);
    this.#extra = extra;
  }

  /**
   * Loads the committed checkpoint into this rank's engine and resolves with it (with the running
   * training score it held); `undefined` when the folder holds none. Every rank calls it.
   */
  async load(config: TrainConfig): Promise<{ meta: CheckpointMeta; score: Score } | undefined> {
    const meta = readCheckpoint(this.#o.dir, config);
    if (typeof meta === "string") throw new Error(meta);
    if (!meta) return undefined;
    this.#generation = meta.generation;
    const bytes = await Deno.readFile(
      `${this.#o.dir}/${rankFile(meta.generation, this.#comm.rank)}`,
    );
    const { params, optimizer } = this.#state();
    const floats = params.length + optimizer.length + this.#extra.length;
    if (bytes.byteLength !== 24 + 4 * floats) {
      throw new Error(`${this.#o.dir}: rank ${this.#comm.rank}'s file has the wrong size`);
    }
    const score = new Float64Array(bytes.buffer, 0, 3);
    const state = new Float32Array(bytes.buffer, 24, floats);
    const extraAt = params.length + optimizer.length;
    await params.write(state.subarray(0, params.length));
    if (optimizer.length > 0) await optimizer.write(state.subarray(params.length, extraAt));
    this.#extra.set(state.subarray(extraAt));
    return { meta, score: { loss: score[0], correct: score[1], rows: score[2] } };
  }

  /**
   * After a step of an epoch of `steps`: counts it and, when `every` batches have passed and the
   * strategy's state is whole (`clean`: no half-accumulated gradients), writes a checkpoint at
   * `position` (the promise of it; `undefined` when it writes none).
   * Collective: every rank calls it at every step with the same arguments.
   */
  afterStep(
    position: RunPosition,
    steps: number,
    clean: boolean,
    rows: EpochRow[],
  ): Promise<void> | undefined {
    this.#steps++;
    // The epoch's last step is followed by its checkpoint (afterEpoch).
    if (this.#o.every === "epoch" || this.#steps < this.#o.every || !clean) return undefined;
    if (position.step >= steps) return undefined;
    return this.save(position, rows, this.#engine.runningScore?.());
  }

  /** After an epoch: writes a checkpoint at the start of the next one. */
  async afterEpoch(epoch: number, rows: EpochRow[]): Promise<void> {
    await this.save({ epoch: epoch + 1, step: 0 }, rows, { loss: 0, correct: 0, rows: 0 });
  }

  /** Writes every rank's state, then commits the set (collective). */
  async save(position: RunPosition, rows: EpochRow[], score?: Score): Promise<void> {
    this.#steps = 0;
    const generation = this.#generation + 1;
    const { params, optimizer } = this.#state();
    const extraAt = params.length + optimizer.length;
    const bytes = new Uint8Array(24 + 4 * (extraAt + this.#extra.length));
    const s = score ?? { loss: 0, correct: 0, rows: 0 };
    new Float64Array(bytes.buffer, 0, 3).set([s.loss, s.correct, s.rows]);
    const state = new Float32Array(bytes.buffer, 24);
    await params.read(state.subarray(0, params.length));
    if (optimizer.length > 0) await optimizer.read(state.subarray(params.length, extraAt));
    state.set(this.#extra, extraAt);
    const dir = this.#o.dir;
    await writeAtomically(`${dir}/${rankFile(generation, this.#comm.rank)}`, bytes);
    await this.#comm.barrier();
    if (this.#comm.rank === 0) {
      const meta: CheckpointMeta = {
        format: 1,
        generation,
        ...position,
        fingerprint: this.#fingerprint,
        rows,
      };
      await writeAtomically(`${dir}/${META}`, new TextEncoder().encode(JSON.stringify(meta)));
    }
    await this.#comm.barrier();
    // The new set is committed: this rank's file of the previous one goes.
    await Deno.remove(`${dir}/${rankFile(this.#generation, this.#comm.rank)}`).catch(() => {});
    this.#generation = generation;
  }

  #state() {
    return { params: this.#engine.params.local, optimizer: this.#engine.optimizerState };
  }
}

/** Writes `bytes` to `path` through a temporary file and a rename, so `path` is whole or absent. */
async function writeAtomically(path: string, bytes: Uint8Array): Promise<void> {
  await Deno.writeFile(`${path}.tmp`, bytes);
  await Deno.rename(`${path}.tmp`, path);
}
