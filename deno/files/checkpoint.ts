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
import type { EpochRow } from "../../trainer/epochs.ts";
import type { RunPosition } from "../../trainer/training_run.ts";
import {
  CheckpointError,
  CheckpointSchedule,
  decodeState,
  FILE_WORDS,
  hex,
  packFile,
  recvBytes,
  SCORE_BYTES,
  sendBytes,
  unpackFile,
} from "../../trainer/checkpoint_state.ts";
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

export { CheckpointError };

/** Which committed set: the last one, or the one before it. */
export type Generation = "latest" | "previous";

/** The files of each set. */
export const META_FILES: Record<Generation, string> = {
  latest: "checkpoint.json",
  previous: "checkpoint.previous.json",
};
const rankFile = (generation: number, rank: number) => `rank-${rank}.g${generation}.bin`;
const RANK_FILE = /^rank-(\d+)\.g(\d+)\.bin$/;

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
  const problem = fieldProblem(meta);
  if (problem) return `${path} is not a checkpoint this run can trust: ${problem}`;
  const want = fingerprintOf(config);
  const differ = Object.keys(want).filter((k) =>
    JSON.stringify(want[k]) !== JSON.stringify(meta.fingerprint[k]) &&
    !(k === "procs" && resizable(meta))
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

/**
 * Whether a run of another size may go on from `meta` (an elastic restart with the ranks that
 * remain): where every rank held one replica of everything it keeps — allreduce's parameters and
 * optimizer state, at an epoch's end (the data of an epoch is dealt by the group's size), with no
 * per-rank residual — each rank loads the file of its rank, or rank 0's beyond the set's.
 */
function resizable(meta: CheckpointMeta): boolean {
  const f = meta.fingerprint;
  return meta.step === 0 && f.sync === "allreduce" && f.errorFeedback !== true;
}

/** The file rank `rank` loads of `meta` (its own, or rank 0's where the set has fewer ranks). */
export function sourceRank(meta: { files: unknown[] }, rank: number): number {
  return rank < meta.files.length ? rank : 0;
}

const isCount = (x: unknown, min = 0): x is number => Number.isInteger(x) && (x as number) >= min;

/** The first field of `m` that a set written by this version could not hold, if any. */
function fieldProblem(m: CheckpointMeta): string | undefined {
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
  const ranks = m.fingerprint.procs;
  if (!isCount(ranks, 1)) return `procs ${shown(ranks)}`;
  if (!Array.isArray(m.files) || m.files.length !== ranks) {
    return `${Array.isArray(m.files) ? m.files.length : "no"} rank files for ${ranks} ranks`;
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
export class Checkpointer extends CheckpointSchedule {
  readonly #fingerprint: Record<string, unknown>;
  /** The generation last committed or loaded (0: none). */
  #generation = 0;
  /** Rank 0: the set last committed or loaded, kept as the previous one by the next commit. */
  #committed?: CheckpointMeta;
  /** This rank's file's digest (8 words) and size (2 words), and every rank's, for rank 0. */
  readonly #mine: HostBuffer<Int32Array>;
  readonly #all: HostBuffer<Int32Array>;
  /** The group's tabs, whose files rank 0 keeps (they hand them over: relayed_checkpoints.ts). */
  readonly #tabs: number[];

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
    super(comm, engine, options, extra);
    this.#fingerprint = fingerprintOf(config);
    const words = { dtype: "i32", memory: "host" } as const;
    this.#mine = comm.alloc(FILE_WORDS, words) as HostBuffer<Int32Array>;
    this.#all = comm.alloc(FILE_WORDS * comm.size, words) as HostBuffer<Int32Array>;
    this.#tabs = comm.rank !== 0
      ? []
      : (comm.members ?? []).flatMap((k, r) => k === "tab" ? [r] : []);
  }

  /**
   * Loads the set `config.resume` names (the latest, or the one before it) into this rank's
   * engine, checking this rank's file against its size and digest and its numbers for NaN and
   * infinities, and resolves with it (with the running training score it held); `undefined`
   * when the folder holds none. Every rank calls it; rank 0 hands each tab its set and file.
   */
  async load(
    config: TrainConfig,
    replicatedAt: (step: number) => boolean,
  ): Promise<{ meta: CheckpointMeta; score: Score; epochMs: number } | undefined> {
    const which = config.resume === "previous" ? "previous" : "latest";
    const meta = readMeta(this.options.dir, config, which);
    if (typeof meta === "string") throw new CheckpointError(meta);
    for (const tab of this.#tabs) {
      await sendBytes(this.comm, new TextEncoder().encode(meta ? JSON.stringify(meta) : ""), tab);
      if (meta) await sendBytes(this.comm, this.#readFile(meta, which, sourceRank(meta, tab)), tab);
    }
    if (!meta) return undefined;
    const rank = this.comm.rank, source = sourceRank(meta, rank);
    const bytes = this.#readFile(meta, which, source);
    const path = `${this.options.dir}/${meta.files[source].name}`;
    const state = decodeState(bytes, path, rank, this.engine, this.extra);
    if (replicatedAt(meta.step)) await this.#checkReplicas(meta, which, state.params);
    this.#generation = meta.generation;
    this.#committed = meta;
    await state.install();
    return { meta, score: state.score, epochMs: state.epochMs };
  }

  /** Rank `rank`'s file of `meta`, checked against its size and digest. */
  #readFile(meta: CheckpointMeta, which: Generation, rank: number): Uint8Array<ArrayBuffer> {
    const file = meta.files[rank];
    const path = `${this.options.dir}/${file.name}`;
    const bytes = Deno.readFileSync(path);
    const problem = fileProblem(bytes, file);
    if (problem) {
      throw new CheckpointError(
        `${path} ${problem} in ${this.options.dir}/${META_FILES[which]}`,
      );
    }
    return bytes;
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
    await this.comm.allgather(this.#mine, this.#all);
    // Each rank's digest, of the file it loaded (sourceRank's).
    const digests = Array.from(
      { length: this.comm.size },
      (_, r) => this.#all.view.subarray(r * FILE_WORDS, r * FILE_WORDS + 8).join(),
    );
    const holders = (d: string) => digests.filter((x) => x === d).length;
    const common = digests.reduce((best, d) => holders(d) > holders(best) ? d : best);
    if (holders(common) === digests.length) return;
    const names = (rs: number[]) =>
      [...new Set(rs.map((r) => meta.files[sourceRank(meta, r)].name))].join(", ");
    const ranks = digests.map((_, r) => r);
    const set = `${this.options.dir}/${META_FILES[which]}`;
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
   * Writes every rank's state, then commits the set (collective). A write that fails fails the
   * group; what it left is removed before the next run starts (removeUncommitted).
   */
  protected async write(position: RunPosition, rows: EpochRow[], bytes: Uint8Array<ArrayBuffer>) {
    const comm = this.comm, dir = this.options.dir;
    const generation = this.#generation + 1;
    writeAtomically(`${dir}/${rankFile(generation, comm.rank)}`, bytes, { durable: true });
    for (const tab of this.#tabs) {
      const file = await recvBytes(comm, tab);
      writeAtomically(`${dir}/${rankFile(generation, tab)}`, file, { durable: true });
    }
    // Every rank's size and digest reach rank 0, which is also the sign every file is written.
    packFile(this.#mine.view, digestOf(bytes), bytes.byteLength);
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
    // The sets now name this generation and the one before: this rank's (and its tabs') older
    // files go.
    for (const r of [comm.rank, ...this.#tabs]) {
      this.#removeFilesBut(r, [this.#generation, generation]);
    }
    this.#generation = generation;
  }

  #removeFilesBut(rank: number, generations: number[]): void {
    for (const { name } of Deno.readDirSync(this.options.dir)) {
      const m = name.match(RANK_FILE);
      if (m && Number(m[1]) === rank && !generations.includes(Number(m[2]))) {
        removeQuietly(`${this.options.dir}/${name}`);
      }
    }
  }
}
