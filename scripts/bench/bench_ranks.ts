/**
 * Ranks behind `deno bench` (primitives_bench.ts): they stay up between benchmarks and carry out
 * commands — prepare a case, run it `ops` times — so each benchmark's timed region holds only the
 * operations, not rank start-up or buffer set-up. Worker ranks read commands from a
 * SharedArrayBuffer mailbox; process ranks (`ws`) receive them from rank 0, the bench process.
 * @module
 */

import type { Communicator } from "../../core.ts";
import type { MemoryKind } from "../../core.ts";
import {
  type PreparedCase,
  type Primitive,
  PRIMITIVES,
  type SizedCase,
} from "../../bench/cases.ts";

/** Mailbox words: the launcher bumps SEQ after writing a command; ranks echo SEQ into DONE+rank. */
export const MAILBOX = { SEQ: 0, COMMAND: 1, CASE: 2, OPS: 3, DONE: 4 } as const;
/** Commands. */
export const COMMAND = { PREPARE: 1, RUN: 2, STOP: 3 } as const;
/** Tag of the commands rank 0 sends to process ranks: far from any the primitives use. */
export const COMMAND_TAG = 1 << 29;

/** One benchmarked case. */
export interface BenchCase {
  primitive: Primitive;
  count: number;
}

/** What the launcher passes; `mailbox` for worker ranks only. */
export interface BenchRankArgs {
  mailbox?: SharedArrayBuffer;
  cases: BenchCase[];
  memory: MemoryKind;
}

/** Carries out commands on one rank. */
export class CaseRunner {
  readonly #comm: Communicator;
  readonly #args: BenchRankArgs;
  #prepared: { primitive: Primitive; buffers: PreparedCase } | undefined;
  #current: SizedCase | undefined;

  constructor(comm: Communicator, args: BenchRankArgs) {
    this.#comm = comm;
    this.#args = args;
  }

  /** Sets up case `index` and checks one run of it. */
  async #prepare(index: number): Promise<void> {
    const c = this.#args.cases[index];
    // Buffers are allocated once per primitive at its largest benchmarked size.
    if (this.#prepared?.primitive !== c.primitive) {
      this.#prepared?.buffers.free();
      const max = Math.max(
        ...this.#args.cases.filter((x) => x.primitive === c.primitive).map((x) => x.count),
      );
      this.#prepared = {
        primitive: c.primitive,
        buffers: PRIMITIVES[c.primitive].prepare(this.#comm, max, {
          dtype: "f32",
          memory: this.#args.memory,
          op: "sum",
          root: 0,
          algorithm: "auto",
        }),
      };
    }
    this.#current = this.#prepared.buffers.sized(c.count);
    await this.#current.fill();
    await this.#current.run();
    if (await this.#current.wrong() > 0) {
      throw new Error(`${c.primitive} of ${c.count} floats is wrong`);
    }
  }

  /** Runs the prepared case `ops` times, to their completion (device work included). */
  async #run(ops: number): Promise<void> {
    for (let i = ops; i > 0; i--) await this.#current!.run();
    await this.#comm.synchronize();
  }

  /** Carries out one command; false once told to stop. */
  async do(command: number, index: number, ops: number): Promise<boolean> {
    if (command === COMMAND.STOP) {
      this.#prepared?.buffers.free();
      return false;
    }
    if (command === COMMAND.PREPARE) await this.#prepare(index);
    else await this.#run(ops);
    return true;
  }
}

/** Serves commands until STOP: from the mailbox (workers) or from rank 0 (processes). */
export async function run(comm: Communicator, args: BenchRankArgs): Promise<void> {
  const runner = new CaseRunner(comm, args);
  if (!args.mailbox) {
    const command = new Int32Array(3);
    for (;;) {
      await comm.recv(command, 0, { tag: COMMAND_TAG });
      if (!await runner.do(command[0], command[1], command[2])) return;
    }
  }
  const box = new Int32Array(args.mailbox);
  for (let seen = 0;;) {
    const waited = Atomics.waitAsync(box, MAILBOX.SEQ, seen);
    if (waited.async) await waited.value;
    seen = Atomics.load(box, MAILBOX.SEQ);
    if (!await runner.do(box[MAILBOX.COMMAND], box[MAILBOX.CASE], box[MAILBOX.OPS])) return;
    Atomics.store(box, MAILBOX.DONE + comm.rank, seen);
    Atomics.notify(box, MAILBOX.DONE + comm.rank);
  }
}
