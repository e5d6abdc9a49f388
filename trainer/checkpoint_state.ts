/**
 * What every rank's checkpoints share, in any runtime: the layout of a rank's file (its running
 * score and epoch time, then its parameters, optimizer state and extra state as f32), the record
 * of a file the ranks exchange (its SHA-256 and size), and when a checkpoint is due. Deno's ranks
 * keep their files in the checkpoint's folder (deno/files/checkpoint.ts); a tab's rank hands its
 * file to rank 0, which keeps it beside the others (relayed_checkpoints.ts).
 * @module
 */

import type { Communicator } from "../core.ts";
import type { CheckpointOptions } from "./config.ts";
import type { Engine, Score } from "./engine.ts";
import type { EpochRow } from "./epochs.ts";
import type { StepState } from "./sync/strategy.ts";
import type { RunCheckpoints, RunPosition } from "./training_run.ts";

/**
 * Bytes before a rank file's floats, as f64: its running score (loss, correct, rows) and the ms
 * this rank had spent in the epoch (so a resumed epoch's time covers all of it).
 */
export const SCORE_BYTES = 32;
/** Words a rank file's record takes between ranks: its SHA-256 (8) and its size (2). */
export const FILE_WORDS = 10;
/** Tag of the messages that carry a tab's file to rank 0 and back. */
export const CHECKPOINT_TAG = 0xc4ec;

/** A checkpoint that cannot be trusted or gone on from: one line naming its file. */
export class CheckpointError extends Error {
  /** Always `CheckpointError`. */
  override name = "CheckpointError";
}

/** The state a rank's file holds: its engine's parameters and optimizer state, and `extra`. */
function stateOf(engine: Engine) {
  return { params: engine.params.local, optimizer: engine.optimizerState };
}

/** A rank's file: `score`, `epochMs`, and its engine's state with `extra`. */
export async function encodeState(
  engine: Engine,
  extra: Float32Array,
  score: Score | undefined,
  epochMs: number,
): Promise<Uint8Array<ArrayBuffer>> {
  const { params, optimizer } = stateOf(engine);
  const extraAt = params.length + optimizer.length;
  const bytes = new Uint8Array(SCORE_BYTES + 4 * (extraAt + extra.length));
  const s = score ?? { loss: 0, correct: 0, rows: 0 };
  new Float64Array(bytes.buffer, 0, 4).set([s.loss, s.correct, s.rows, epochMs]);
  const state = new Float32Array(bytes.buffer, SCORE_BYTES);
  await params.read(state.subarray(0, params.length));
  if (optimizer.length > 0) await optimizer.read(state.subarray(params.length, extraAt));
  state.set(extra, extraAt);
  return bytes;
}

/**
 * Rank `rank`'s file (`bytes`, named `path`) read back: its score, epoch time and the parameters
 * it holds, once it is checked to be this run's size and finite; a CheckpointError otherwise.
 * `install` then writes it into the engine and `extra`.
 */
export function decodeState(
  bytes: Uint8Array,
  path: string,
  rank: number,
  engine: Engine,
  extra: Float32Array,
): { score: Score; epochMs: number; params: Float32Array; install(): Promise<void> } {
  const { params, optimizer } = stateOf(engine);
  const floats = params.length + optimizer.length + extra.length;
  if (bytes.byteLength !== SCORE_BYTES + 4 * floats) {
    throw new CheckpointError(
      `${path} holds ${bytes.byteLength} bytes; this run's rank ${rank} needs ` +
        `${SCORE_BYTES + 4 * floats}`,
    );
  }
  const aligned = bytes.byteOffset % 8 === 0 ? bytes : bytes.slice();
  const score = new Float64Array(aligned.buffer, aligned.byteOffset, 4);
  const state = new Float32Array(aligned.buffer, aligned.byteOffset + SCORE_BYTES, floats);
  if (!state.every(Number.isFinite) || !score.every(Number.isFinite)) {
    throw new CheckpointError(`${path} holds NaN or infinite values: not a state to train on from`);
  }
  const extraAt = params.length + optimizer.length;
  return {
    score: { loss: score[0], correct: score[1], rows: score[2] },
    epochMs: score[3],
    params: state.subarray(0, params.length),
    async install() {
      await params.write(state.subarray(0, params.length));
      if (optimizer.length > 0) await optimizer.write(state.subarray(params.length, extraAt));
      extra.set(state.subarray(extraAt));
    },
  };
}

/** Writes a file's record (its SHA-256 `digest` and its size) into `into`. */
export function packFile(into: Int32Array, digest: Uint8Array, byteLength: number): void {
  into.set(new Int32Array(Uint8Array.from(digest).buffer));
  into[8] = Math.floor(byteLength / 2 ** 32);
  into[9] = byteLength >>> 0;
}

/** A file's record as its size and its SHA-256 in hex. */
export function unpackFile(words: Int32Array): { bytes: number; sha256: string } {
  const digest = new Uint8Array(Int32Array.from(words.subarray(0, 8)).buffer);
  return { bytes: words[8] * 2 ** 32 + (words[9] >>> 0), sha256: hex(digest) };
}

/** `bytes` in hex. */
export const hex = (bytes: Uint8Array): string =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/** Sends `bytes` to `peer`: their length, then them (as words: messages carry elements). */
export async function sendBytes(comm: Communicator, bytes: Uint8Array, peer: number) {
  await comm.send(Float64Array.of(bytes.byteLength), peer, { tag: CHECKPOINT_TAG });
  if (bytes.byteLength === 0) return;
  const words = new Int32Array(Math.ceil(bytes.byteLength / 4));
  new Uint8Array(words.buffer).set(bytes);
  await comm.send(words, peer, { tag: CHECKPOINT_TAG });
}

/** What `peer` sent with {@linkcode sendBytes}. */
export async function recvBytes(
  comm: Communicator,
  peer: number,
): Promise<Uint8Array<ArrayBuffer>> {
  const length = new Float64Array(1);
  await comm.recv(length, peer, { tag: CHECKPOINT_TAG });
  const words = new Int32Array(Math.ceil(length[0] / 4));
  if (words.length > 0) await comm.recv(words, peer, { tag: CHECKPOINT_TAG });
  return new Uint8Array(words.buffer, 0, length[0]);
}

/**
 * When a checkpoint is due: after every `every` steps whose state is whole, and after every
 * epoch. Its ranks' `save` writes it (collective: every rank calls each method alike).
 */
export abstract class CheckpointSchedule implements RunCheckpoints {
  /** The rank's communicator. */
  protected readonly comm: Communicator;
  /** The engine whose state a file holds. */
  protected readonly engine: Engine;
  /** Where, and how often. */
  protected readonly options: CheckpointOptions;
  /** State kept beside the engine's (the error-feedback residual). */
  protected readonly extra: Float32Array;
  /** Steps since the last checkpoint. */
  #steps = 0;
  /** When this rank's current epoch began, less the time it had run before a resume. */
  #epochStartedAt = performance.now();

  /** The checkpoints of `engine` (and `extra`) on `comm`'s rank, as `options` says. */
  constructor(comm: Communicator, engine: Engine, options: CheckpointOptions, extra: Float32Array) {
    this.comm = comm;
    this.engine = engine;
    this.options = options;
    this.extra = extra;
  }

  /** Loads the set to go on from, if any (see `RunCheckpoints.load`). */
  abstract load(
    ...args: Parameters<RunCheckpoints["load"]>
  ): ReturnType<RunCheckpoints["load"]>;

  /** Writes a checkpoint at `position` (collective). */
  protected abstract write(
    position: RunPosition,
    rows: EpochRow[],
    bytes: Uint8Array,
  ): Promise<void>;

  /** This rank's file now, with `score`. */
  async save(position: RunPosition, rows: EpochRow[], score: Score | undefined): Promise<void> {
    this.#steps = 0;
    const epochMs = performance.now() - this.#epochStartedAt;
    await this.write(position, rows, await encodeState(this.engine, this.extra, score, epochMs));
  }

  /** Counts a step; writes a checkpoint when one is due (see `RunCheckpoints.afterStep`). */
  afterStep(
    position: RunPosition,
    steps: number,
    state: StepState,
    rows: EpochRow[],
  ): Promise<void> | undefined {
    this.#steps++;
    const every = this.options.every;
    // The epoch's last step is followed by its checkpoint (afterEpoch).
    if (every === "epoch" || this.#steps < every || !state.clean) return undefined;
    if (position.step >= steps) return undefined;
    return this.save(position, rows, this.engine.runningScore?.());
  }

  /** An epoch's loop starts now, `carriedMs` into it. */
  startEpoch(carriedMs?: number): void {
    this.#epochStartedAt = performance.now() - (carriedMs ?? 0);
  }

  /** After an epoch: a checkpoint at the start of the next one. */
  async afterEpoch(epoch: number, rows: EpochRow[]): Promise<void> {
    this.#epochStartedAt = performance.now();
    await this.save({ epoch: epoch + 1, step: 0 }, rows, { loss: 0, correct: 0, rows: 0 });
  }
}
