/**
 * Checkpoints: what a run needs to go on as if it had never stopped — every rank's parameters,
 * optimizer state (momentum) and running training score, where the run stands (epoch, step: the
 * data order follows from the seed and the epoch), and the finished epochs' rows — kept in one
 * folder. Each rank writes its own file of a new generation; rank 0 then commits the set by
 * replacing `checkpoint.json`, which names each rank's file with its size and SHA-256, after
 * keeping the set it replaces as `checkpoint.previous.json`. Every file is written atomically and
 * flushed (deno/files/atomic_file.ts): a crash at any moment leaves the last set whole. On the
 * way back in the fields are checked, every file's digest (integrity against accidents, not
 * authenticity: anyone who can write the folder can write matching digests), the numbers are
 * finite, and ranks that held one replica of the parameters compare them — where they did
 * follows from the strategy and the settings, never from a field of the set (docs/training.md,
 * "Checkpoints").
 * @module
 */

import { createHash } from "node:crypto";
import type { Communicator, HostBuffer } from "../../core.ts";
import type { CheckpointOptions, TrainConfig } from "../../trainer/config.ts";
import type { Engine, Score } from "../../trainer/engine.ts";
import type { StepState } from "../../trainer/sync/strategy.ts";
import type { EpochRow } from "../../trainer/epochs.ts";
import type { RunCheckpoints, RunPosition } from "../../trainer/training_run.ts";
import { removeQuietly, writeAtomically } from "./atomic_file.ts";

/** One rank's file of a generation, as the set names it. */
export interface RankFile {
  /** Its name in the checkpoint's folder. */
  name: string;
  /** Its size. */
  bytes: number;
  /** SHA-256 of its bytes, in hex. */
  sha256: string;
}

/** A committed set: `checkpoint.json` (or the one before it, `checkpoint.previous.json`). */
export interface CheckpointMeta extends RunPosition {
  /** The format's version. */
  format: 2;
  /** Which generation of rank files the set names. */
  generation: number;
  /** The settings that decide the arithmetic; a resumed run must match them. */
  fingerprint: Record<string, unknown>;
  /** The finished epochs' rows. */
  rows: EpochRow[];
  /** Each rank's file, by rank. */
  files: RankFile[];
}

/** A checkpoint that cannot be trusted or gone on from: one line naming its file. */
export class CheckpointError extends Error {
  /** Always `CheckpointError`. */
  override name = "CheckpointError";
}

/** Which committed set: the last one, or the one before it. */
export type Generation = "latest" | "previous";

/** The files of each set. */
export const META_FILES: Record<Generation, string> = {
  latest: "checkpoint.json",
  previous: "checkpoint.previous.json",
};
const rankFile = (generation: number, rank: number) => `rank-${rank}.g${generation}.bin`;
const RANK_FILE = /^rank-(\d+)\.g(\d+)\.bin$/;
/**
 * Bytes before a rank file's floats, as f64: its running score (loss, correct, rows) and the ms
 * this rank had spent in the epoch (so a resumed epoch's time covers all of it).
 */
const SCORE_BYTES = 32;

/** The settings a checkpoint holds a run to: everything that changes the arithmetic. */
export function fingerprintOf(c: TrainConfig): Record<string, unknown> {
  return {
    procs: c.procs,
    sync: c.sync,
    syncEvery: c.syncEvery,
    psMode: c.psMode,
    gradDtype: c.gradDtype,
    errorFeedback: c.errorFeedback,
    reproducible: c.reproducible,
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
 * The set `which` in `dir`, checked whole — its fields, and every rank file's size and digest —
 * or why a run with `config` cannot go on from it (one line), or `undefined` when there is none.
 * When the latest set does not verify and the one before it does, the line says so. `which` is
 * the latest unless given.
 */
export function readCheckpoint(
  dir: string,
  config: TrainConfig,
  which?: Generation,
): CheckpointMeta | string | undefined {
  which ??= "latest";
  const found = readVerified(dir, config, which);
  if (typeof found !== "string" || which === "previous") return found;
  const before = readVerified(dir, config, "previous");
  return typeof before === "object"
    ? `${found}; the checkpoint before it (epoch ${before.epoch + 1}, step ${before.step}) is ` +
      `whole: --resume-previous goes on from it`
    : found;
}

function readVerified(
  dir: string,
  config: TrainConfig,
  which: Generation,
): CheckpointMeta | string | undefined {
  const meta = readMeta(dir, config, which);
  if (typeof meta !== "object") return meta;
  for (const file of meta.files) {
    let bytes: Uint8Array;
    try {
      bytes = Deno.readFileSync(`${dir}/${file.name}`);
    } catch (e) {
      return `${dir}/${file.name}, named by ${dir}/${META_FILES[which]}, cannot be read (${
        e instanceof Deno.errors.NotFound ? "it is missing" : (e as Error).name
      })`;
    }
    const problem = fileProblem(bytes, file);
    if (problem) return `${dir}/${file.name} ${problem} in ${dir}/${META_FILES[which]}`;
  }
  return meta;
}

/** Why `bytes` are not the file `file` describes (its size, then its digest), if they are not. */
function fileProblem(bytes: Uint8Array, file: RankFile): string | undefined {
  if (bytes.byteLength !== file.bytes) {
    return `has ${bytes.byteLength} bytes where ${file.bytes} are recorded`;
  }
  if (sha256(bytes) !== file.sha256) return "does not match its SHA-256 recorded";
  return undefined;
}

/** SHA-256 of `bytes`. */
function digestOf(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  return Uint8Array.from(createHash("sha256").update(bytes).digest());
}

const hex = (bytes: Uint8Array) =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
const sha256 = (bytes: Uint8Array) => hex(digestOf(bytes));

/** The set's fields, checked (not its files), or why not, or `undefined` when there is none. */
function readMeta(
  dir: string,
  config: TrainConfig,
  which: Generation,
): CheckpointMeta | string | undefined {
  const path = `${dir}/${META_FILES[which]}`;
  let text: string;
  try {
    text = Deno.readTextFileSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    return `cannot read ${path}: ${(e as Error).message}`;
  }
  let meta: CheckpointMeta;
  try {
    meta = JSON.parse(text);
  } catch {
    return `${path} is not a checkpoint (not JSON)`;
  }
  const problem = fieldProblem(meta, config);
  if (problem) return `${path} is not a checkpoint this run can trust: ${problem}`;
  const want = fingerprintOf(config);
  const differ = Object.keys(want).filter((k) =>
    JSON.stringify(want[k]) !== JSON.stringify(meta.fingerprint[k])
  );
  if (differ.length > 0) {
    const k = differ[0];
    return `${dir} holds a run with ${k} ${JSON.stringify(meta.fingerprint[k])}; this run ` +
      `has ${JSON.stringify(want[k])} (resume with the same settings)`;
  }
  if (meta.epoch > config.epochs) {
    return `${dir} holds a run ${meta.epoch} epochs in; this run has --epochs ${config.epochs}`;
  }
  return meta;
}

const isCount = (x: unknown, min = 0): x is number => Number.isInteger(x) && (x as number) >= min;

/** The first field of `m` that a set written by this version could not hold, if any. */
function fieldProblem(m: CheckpointMeta, config: TrainConfig): string | undefined {
  const shown = (x: unknown) => JSON.stringify(x) ?? String(x);
  if (typeof m !== "object" || m === null) return "not an object";
  if (m.format !== 2) return `format ${shown(m.format)} (this version reads 2)`;
  if (!isCount(m.generation, 1)) return `generation ${shown(m.generation)}`;
  if (!isCount(m.epoch)) return `epoch ${shown(m.epoch)} (expected an integer ≥ 0)`;
  if (!isCount(m.step)) return `step ${shown(m.step)} (expected an integer ≥ 0)`;
  if (typeof m.fingerprint !== "object" || m.fingerprint === null) return "no fingerprint";
  if (!Array.isArray(m.rows) || m.rows.length !== m.epoch) {
    return `${Array.isArray(m.rows) ? m.rows.length : "no"} rows for epoch ${m.epoch}`;
  }
  const badRow = m.rows.findIndex((r, i) =>
    typeof r !== "object" || r === null || r.epoch !== i + 1 ||
    !Object.values(r).every((v) => typeof v === "number" && Number.isFinite(v))
  );
  if (badRow >= 0) return `row ${badRow + 1} ${shown(m.rows[badRow])}`;
  if (!Array.isArray(m.files) || m.files.length !== config.procs) {
    return `${Array.isArray(m.files) ? m.files.length : "no"} rank files for ${config.procs} ranks`;
  }
  const badFile = m.files.findIndex((f, r) =>
    typeof f !== "object" || f === null || f.name !== rankFile(m.generation, r) ||
    !isCount(f.bytes, SCORE_BYTES) || !/^[0-9a-f]{64}$/.test(String(f.sha256))
  );
  if (badFile >= 0) return `rank ${badFile}'s file entry ${shown(m.files[badFile])}`;
  return undefined;
}

/**
 * Removes what no committed set names from `dir`: rank files of generations that were never
 * committed (a run that failed while writing one) and temporary files of writes that did not
 * finish. Only while no rank of a run using `dir` is running.
 */
export function removeUncommitted(dir: string): void {
  const named = new Set<string>();
  for (const which of ["latest", "previous"] as const) {
    try {
      const meta = JSON.parse(Deno.readTextFileSync(`${dir}/${META_FILES[which]}`));
      for (const f of Array.isArray(meta?.files) ? meta.files : []) named.add(String(f?.name));
    } catch { /* none, or not a set: it names nothing */ }
  }
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(dir)];
  } catch {
    return; // no folder yet
  }
  for (const { name, isFile } of entries) {
    const ours = RANK_FILE.test(name) ||
      /^\.(checkpoint(\.previous)?\.json|rank-\d+\.g\d+\.bin)\.[0-9a-f]+\.tmp$/.test(name);
    if (isFile && ours && !named.has(name)) removeQuietly(`${dir}/${name}`);
  }
}

/** Removes every checkpoint file from `dir` (a run told to start again over another's). */
export function removeCheckpoints(dir: string): void {
  for (const which of ["latest", "previous"] as const) removeQuietly(`${dir}/${META_FILES[which]}`);
  removeUncommitted(dir);
}

/** One rank's side of a run's checkpoints. */
export class Checkpointer implements RunCheckpoints {
  readonly #comm: Communicator;
  readonly #engine: Engine;
  readonly #o: CheckpointOptions;
  readonly #fingerprint: Record<string, unknown>;
  readonly #extra: Float32Array;
  /** The generation last committed or loaded (0: none). */
  #generation = 0;
  /** Rank 0: the set last committed or loaded, kept as the previous one by the next commit. */
  #committed?: CheckpointMeta;
  /** Steps since the last checkpoint. */
  #steps = 0;
  /** This rank's file's digest (8 words) and size (2 words), and every rank's, for rank 0. */
  readonly #mine: HostBuffer<Int32Array>;
  readonly #all: HostBuffer<Int32Array>;

  /** When this rank's current epoch began, less the time it had run before a resume. */
  #epochStartedAt = performance.now();

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
    const words = { dtype: "i32", memory: "host" } as const;
    this.#mine = comm.alloc(FILE_WORDS, words) as HostBuffer<Int32Array>;
    this.#all = comm.alloc(FILE_WORDS * comm.size, words) as HostBuffer<Int32Array>;
  }

  /**
   * Loads the set `config.resume` names (the latest, or the one before it) into this rank's
   * engine, checking this rank's file against its size and digest and its numbers for NaN and
   * infinities, and resolves with it (with the running training score it held); `undefined`
   * when the folder holds none. Every rank calls it.
   */
  async load(
    config: TrainConfig,
    replicatedAt: (step: number) => boolean,
  ): Promise<{ meta: CheckpointMeta; score: Score; epochMs: number } | undefined> {
    const which = config.resume === "previous" ? "previous" : "latest";
    const meta = readMeta(this.#o.dir, config, which);
    if (typeof meta === "string") throw new CheckpointError(meta);
    if (!meta) return undefined;
    const rank = this.#comm.rank, file = meta.files[rank];
    const path = `${this.#o.dir}/${file.name}`;
    const bytes = await Deno.readFile(path);
    const problem = fileProblem(bytes, file);
    if (problem) {
      throw new CheckpointError(`${path} ${problem} in ${this.#o.dir}/${META_FILES[which]}`);
    }
    const { params, optimizer } = this.#state();
    const floats = params.length + optimizer.length + this.#extra.length;
    if (bytes.byteLength !== SCORE_BYTES + 4 * floats) {
      throw new CheckpointError(
        `${path} holds ${bytes.byteLength} bytes; this run's rank ${rank} needs ` +
          `${SCORE_BYTES + 4 * floats}`,
      );
    }
    const score = new Float64Array(bytes.buffer, 0, 4);
    const state = new Float32Array(bytes.buffer, SCORE_BYTES, floats);
    if (!state.every(Number.isFinite) || !score.every(Number.isFinite)) {
      throw new CheckpointError(
        `${path} holds NaN or infinite values: not a state to train on from`,
      );
    }
    if (replicatedAt(meta.step)) {
      await this.#checkReplicas(meta, which, state.subarray(0, params.length));
    }
    this.#generation = meta.generation;
    this.#committed = meta;
    const extraAt = params.length + optimizer.length;
    await params.write(state.subarray(0, params.length));
    if (optimizer.length > 0) await optimizer.write(state.subarray(params.length, extraAt));
    this.#extra.set(state.subarray(extraAt));
    return {
      meta,
      score: { loss: score[0], correct: score[1], rows: score[2] },
      epochMs: score[3],
    };
  }

  /**
   * Every rank's digest of the parameters it loaded, compared (collective): a set written where
   * the ranks held one replica whose files now disagree (changed consistently with their
   * digests, say) would train on silently diverged replicas; every rank refuses it alike, naming
   * the files that differ from the majority's (or, without one, every file).
   */
  async #checkReplicas(meta: CheckpointMeta, which: Generation, params: Float32Array) {
    this.#mine.view.fill(0).set(
      new Int32Array(
        digestOf(new Uint8Array(params.buffer, params.byteOffset, params.byteLength)).buffer,
      ),
    );
    await this.#comm.allgather(this.#mine, this.#all);
    const digests = meta.files.map((_, r) =>
      this.#all.view.subarray(r * FILE_WORDS, r * FILE_WORDS + 8).join()
    );
    const holders = (d: string) => digests.filter((x) => x === d).length;
    const common = digests.reduce((best, d) => holders(d) > holders(best) ? d : best);
    if (holders(common) === digests.length) return;
    const names = (rs: number[]) => rs.map((r) => meta.files[r].name).join(", ");
    const ranks = digests.map((_, r) => r);
    const set = `${this.#o.dir}/${META_FILES[which]}`;
    const odd = ranks.filter((r) => digests[r] !== common);
    const why = holders(common) * 2 > digests.length
      ? `${names(odd)} hold${odd.length === 1 ? "s" : ""} other parameters than ${
        names(ranks.filter((r) => digests[r] === common))
      }`
      : `${names(ranks)} hold parameters that differ, with no majority`;
    throw new CheckpointError(
      `${set} was written where every rank held the same parameters, but ${why}: the files ` +
        `were changed after they were written; refusing to resume from diverged replicas`,
    );
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
    state: StepState,
    rows: EpochRow[],
  ): Promise<void> | undefined {
    this.#steps++;
    // The epoch's last step is followed by its checkpoint (afterEpoch).
    if (this.#o.every === "epoch" || this.#steps < this.#o.every || !state.clean) return undefined;
    if (position.step >= steps) return undefined;
    return this.save(position, rows, this.#engine.runningScore?.());
  }

  /** An epoch's loop starts now (after `carriedMs` of it before a resume). */
  startEpoch(carriedMs?: number): void {
    carriedMs ??= 0;
    this.#epochStartedAt = performance.now() - carriedMs;
  }

  /** After an epoch: writes a checkpoint at the start of the next one. */
  async afterEpoch(epoch: number, rows: EpochRow[]): Promise<void> {
    this.#epochStartedAt = performance.now();
    await this.save({ epoch: epoch + 1, step: 0 }, rows, { loss: 0, correct: 0, rows: 0 });
  }

  /**
   * Writes every rank's state, then commits the set (collective). A write that fails fails the
   * group; what it left is removed before the next run starts (removeUncommitted).
   */
  async save(position: RunPosition, rows: EpochRow[], score: Score | undefined): Promise<void> {
    this.#steps = 0;
    const comm = this.#comm, dir = this.#o.dir;
    const generation = this.#generation + 1;
    const { params, optimizer } = this.#state();
    const extraAt = params.length + optimizer.length;
    const bytes = new Uint8Array(SCORE_BYTES + 4 * (extraAt + this.#extra.length));
    const s = score ?? { loss: 0, correct: 0, rows: 0 };
    const epochMs = performance.now() - this.#epochStartedAt;
    new Float64Array(bytes.buffer, 0, 4).set([s.loss, s.correct, s.rows, epochMs]);
    const state = new Float32Array(bytes.buffer, SCORE_BYTES);
    await params.read(state.subarray(0, params.length));
    if (optimizer.length > 0) await optimizer.read(state.subarray(params.length, extraAt));
    state.set(this.#extra, extraAt);
    writeAtomically(`${dir}/${rankFile(generation, comm.rank)}`, bytes, { durable: true });
    // Every rank's size and digest reach rank 0, which is also the sign every file is written.
    packFile(this.#mine.view, bytes);
    await comm.allgather(this.#mine, this.#all);
    if (comm.rank === 0) {
      const meta: CheckpointMeta = {
        format: 2,
        generation,
        ...position,
        fingerprint: this.#fingerprint,
        rows: [...rows], // the run goes on adding to its own
        files: Array.from({ length: comm.size }, (_, r) => ({
          name: rankFile(generation, r),
          ...unpackFile(this.#all.view.subarray(r * FILE_WORDS, (r + 1) * FILE_WORDS)),
        })),
      };
      const commit = (which: Generation, set: CheckpointMeta) =>
        writeAtomically(`${dir}/${META_FILES[which]}`, JSON.stringify(set), { durable: true });
      if (this.#committed) commit("previous", this.#committed);
      commit("latest", meta);
      this.#committed = meta;
    }
    await comm.barrier();
    // The sets now name this generation and the one before: this rank's older files go.
    this.#removeOwnFilesBut([this.#generation, generation]);
    this.#generation = generation;
  }

  #removeOwnFilesBut(generations: number[]): void {
    for (const { name } of Deno.readDirSync(this.#o.dir)) {
      const m = name.match(RANK_FILE);
      if (m && Number(m[1]) === this.#comm.rank && !generations.includes(Number(m[2]))) {
        removeQuietly(`${this.#o.dir}/${name}`);
      }
    }
  }

  #state() {
    return { params: this.#engine.params.local, optimizer: this.#engine.optimizerState };
  }
}

/** Words a rank file's record takes between ranks: its SHA-256 (8) and its size (2). */
const FILE_WORDS = 10;

function packFile(into: Int32Array, bytes: Uint8Array): void {
  into.set(new Int32Array(digestOf(bytes).buffer));
  into[8] = Math.floor(bytes.byteLength / 2 ** 32);
  into[9] = bytes.byteLength >>> 0;
}

function unpackFile(words: Int32Array): { bytes: number; sha256: string } {
  const digest = new Uint8Array(Int32Array.from(words.subarray(0, 8)).buffer);
  return { bytes: words[8] * 2 ** 32 + (words[9] >>> 0), sha256: hex(digest) };
}
