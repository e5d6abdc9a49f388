/**
 * A tab's rank's checkpoints: a tab has no folder of the run's, so it hands its file to rank 0,
 * which keeps it in the checkpoint's folder beside the others (deno/files/checkpoint.ts), and
 * gets it back, with the set it belongs to, when the run resumes. The files, their records and
 * the collective steps are the Deno ranks' own (checkpoint_state.ts), so the set is one set.
 * @module
 */

import type { Communicator } from "../core.ts";
import type { CheckpointOptions, TrainConfig } from "./config.ts";
import type { Engine, Score } from "./engine.ts";
import type { EpochRow } from "./epochs.ts";
import type { RunPosition } from "./training_run.ts";
import {
  CheckpointError,
  CheckpointSchedule,
  decodeState,
  FILE_WORDS,
  packFile,
  recvBytes,
  sendBytes,
} from "./checkpoint_state.ts";

/** The set rank 0 hands over on resuming, as far as a tab reads it. */
export interface HandedSet extends RunPosition {
  /** The finished epochs' rows. */
  rows: EpochRow[];
  /** Each rank's file, by rank. */
  files: { name: string }[];
}

/** SHA-256 of `bytes`. */
async function sha256(bytes: Uint8Array<ArrayBuffer>): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}

/** A tab's side of a run's checkpoints (see the module docs). */
export class RelayedCheckpoints extends CheckpointSchedule {
  readonly #words: Int32Array;

  /** A tab's checkpoints of `engine` (and `extra`), kept by rank 0. */
  constructor(
    comm: Communicator,
    engine: Engine,
    options: CheckpointOptions,
    extra: Float32Array = new Float32Array(0),
  ) {
    super(comm, engine, options, extra);
    this.#words = new Int32Array(FILE_WORDS);
  }

  /** The set rank 0 hands over, checked and loaded; undefined when there is none. */
  async load(
    _config: TrainConfig,
    replicatedAt: (step: number) => boolean,
  ): Promise<{ meta: HandedSet; score: Score; epochMs: number } | undefined> {
    const set = await recvBytes(this.comm, 0);
    if (set.byteLength === 0) return undefined;
    const meta = JSON.parse(new TextDecoder().decode(set)) as HandedSet;
    const bytes = await recvBytes(this.comm, 0);
    const rank = this.comm.rank;
    // The set's own file of this rank, or rank 0's where the set has fewer ranks.
    const name = meta.files[rank < meta.files.length ? rank : 0].name;
    const state = decodeState(bytes, name, rank, this.engine, this.extra);
    if (replicatedAt(meta.step)) {
      const p = state.params;
      const digest = await sha256(new Uint8Array(p.buffer, p.byteOffset, p.byteLength).slice());
      const all = await this.#gather(digest, 0);
      if (all.some((d) => d !== all[0])) {
        throw new CheckpointError(
          `${name} and the other ranks' files hold different parameters where ` +
            "every rank held the same: refusing to resume from diverged replicas",
        );
      }
    }
    await state.install();
    return { meta, score: state.score, epochMs: state.epochMs };
  }

  /** Hands this rank's file to rank 0 and takes part in the set's commit. */
  protected async write(_position: RunPosition, _rows: EpochRow[], bytes: Uint8Array<ArrayBuffer>) {
    await sendBytes(this.comm, bytes, 0);
    await this.#gather(await sha256(bytes), bytes.byteLength);
    await this.comm.barrier();
  }

  /** Every rank's record, as the Deno ranks' allgather shares them (digests only, compared). */
  async #gather(digest: Uint8Array, byteLength: number): Promise<string[]> {
    this.#words.fill(0);
    if (byteLength > 0) packFile(this.#words, digest, byteLength);
    else this.#words.set(new Int32Array(Uint8Array.from(digest).buffer));
    const all = new Int32Array(FILE_WORDS * this.comm.size);
    await this.comm.allgather(this.#words, all);
    return Array.from(
      { length: this.comm.size },
      (_, r) => all.subarray(r * FILE_WORDS, r * FILE_WORDS + 8).join(),
    );
  }
}
