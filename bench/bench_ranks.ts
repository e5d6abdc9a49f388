/**
 * Rank program behind `deno bench` (primitives_bench.ts): ranks stay up between benchmarks and
 * run commands from a SharedArrayBuffer mailbox, so each benchmark's timed region holds only the
 * operations, not worker start-up or buffer set-up.
 * @module
 */

import type { Communicator } from "../primitives/communicator.ts";
import type { MemoryKind } from "../primitives/types.ts";
import { type PreparedCase, type PrimitiveName, PRIMITIVES, type SizedCase } from "./primitives.ts";

/** Mailbox words: the launcher bumps SEQ after writing a command; ranks echo SEQ into DONE+rank. */
export const MAILBOX = { SEQ: 0, COMMAND: 1, CASE: 2, OPS: 3, DONE: 4 } as const;
/** Commands. */
export const COMMAND = { PREPARE: 1, RUN: 2, STOP: 3 } as const;

/** One benchmarked case. */
export interface BenchCase {
  primitive: PrimitiveName;
  count: number;
}

/** What the launcher passes. */
export interface BenchRankArgs {
  mailbox: SharedArrayBuffer;
  cases: BenchCase[];
  memory: MemoryKind;
}

/** Serves commands until STOP. */
export async function run(comm: Communicator, args: BenchRankArgs): Promise<void> {
  const box = new Int32Array(args.mailbox);
  let seen = 0;
  let prepared: { primitive: PrimitiveName; buffers: PreparedCase } | undefined;
  let current: SizedCase | undefined;
  for (;;) {
    const waited = Atomics.waitAsync(box, MAILBOX.SEQ, seen);
    if (waited.async) await waited.value;
    seen = Atomics.load(box, MAILBOX.SEQ);
    const command = box[MAILBOX.COMMAND];
    if (command === COMMAND.STOP) break;
    const c = args.cases[box[MAILBOX.CASE]];
    if (command === COMMAND.PREPARE) {
      // Buffers are allocated once per primitive at its largest benchmarked size.
      if (prepared?.primitive !== c.primitive) {
        prepared?.buffers.free();
        const max = Math.max(
          ...args.cases.filter((x) => x.primitive === c.primitive).map((x) => x.count),
        );
        prepared = {
          primitive: c.primitive,
          buffers: PRIMITIVES[c.primitive].prepare(comm, max, {
            dtype: "f32",
            memory: args.memory,
            op: "sum",
            root: 0,
            algorithm: "auto",
          }),
        };
      }
      current = prepared.buffers.sized(c.count);
      current.fill();
      await current.run();
      if (current.wrong() > 0) throw new Error(`${c.primitive} of ${c.count} floats is wrong`);
    } else {
      for (let i = box[MAILBOX.OPS]; i > 0; i--) await current!.run();
    }
    Atomics.store(box, MAILBOX.DONE + comm.rank, seen);
    Atomics.notify(box, MAILBOX.DONE + comm.rank);
  }
  prepared?.buffers.free();
}
