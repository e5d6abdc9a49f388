/**
 * `deno bench`: every primitive at 1 float, 64 KiB, 4 MiB and 64 MiB over each in-process
 * transport, 2 ranks. Groups are per primitive and size, so transports compare side by side.
 * Ranks and buffers are set up outside the timed region; small sizes run a batch of operations
 * per benchmark iteration (named in the benchmark) so the launcher→ranks handoff (~tens of µs)
 * does not swamp them. For latency curves use the CLI (`deno task allreduce`).
 * @module
 */

import { startRanks } from "../primitives/transports/spawn_ranks.ts";
import { type BenchCase, type BenchRankArgs, COMMAND, MAILBOX } from "./bench_ranks.ts";
import { type PrimitiveName, PRIMITIVES } from "./primitives.ts";

const RANKS = 2;
const SIZES = [
  { label: "1 float", count: 1, ops: 100 },
  { label: "64 KiB", count: 16_384, ops: 10 },
  { label: "4 MiB", count: 1_048_576, ops: 1 },
  { label: "64 MiB", count: 16_777_216, ops: 1 },
];
const TRANSPORTS = [
  { transport: "shm", memory: "shared" },
  { transport: "worker", memory: "host" },
] as const;

const cases: BenchCase[] = (Object.keys(PRIMITIVES) as PrimitiveName[]).flatMap((primitive) =>
  SIZES.map((s) => ({ primitive, count: s.count }))
);

/** A group of ranks waiting for commands. */
class BenchGroup {
  readonly #box = new Int32Array(new SharedArrayBuffer((MAILBOX.DONE + RANKS) * 4));
  readonly #results: Promise<unknown>;
  #seq = 0;
  #prepared = -1;

  constructor(transport: "shm" | "worker", memory: "shared" | "host") {
    const args: BenchRankArgs = { mailbox: this.#box.buffer as SharedArrayBuffer, cases, memory };
    this.#results = startRanks(new URL("./bench_ranks.ts", import.meta.url), {
      size: RANKS,
      transport,
      args,
    }).results;
    this.#results.catch(() => {}); // surfaced by the next command
  }

  /** Sets up case `index` on every rank (outside any timed region). */
  async prepare(index: number): Promise<void> {
    if (this.#prepared === index) return;
    await this.#command(COMMAND.PREPARE, index, 0);
    this.#prepared = index;
  }

  /** Runs `ops` operations of the prepared case on every rank. */
  run(ops: number): Promise<void> {
    return this.#command(COMMAND.RUN, this.#prepared, ops);
  }

  async stop(): Promise<void> {
    this.#box[MAILBOX.COMMAND] = COMMAND.STOP;
    Atomics.store(this.#box, MAILBOX.SEQ, ++this.#seq);
    Atomics.notify(this.#box, MAILBOX.SEQ);
    await this.#results;
  }

  async #command(command: number, index: number, ops: number): Promise<void> {
    const box = this.#box;
    box[MAILBOX.COMMAND] = command;
    box[MAILBOX.CASE] = index;
    box[MAILBOX.OPS] = ops;
    const seq = ++this.#seq;
    Atomics.store(box, MAILBOX.SEQ, seq);
    Atomics.notify(box, MAILBOX.SEQ);
    for (let r = 0; r < RANKS; r++) {
      for (
        let v = Atomics.load(box, MAILBOX.DONE + r);
        v !== seq;
        v = Atomics.load(box, MAILBOX.DONE + r)
      ) {
        const waited = Atomics.waitAsync(box, MAILBOX.DONE + r, v, 30_000);
        if (waited.async && (await Promise.race([waited.value, this.#results])) === "timed-out") {
          throw new Error(`bench ranks did not answer within 30 s`);
        }
      }
    }
  }
}

const groups = TRANSPORTS.map(({ transport, memory }) => ({
  transport,
  memory,
  group: new BenchGroup(transport, memory),
}));
globalThis.addEventListener("unload", () => groups.forEach((g) => g.group.stop()));

for (const [index, c] of cases.entries()) {
  const size = SIZES.find((s) => s.count === c.count)!;
  for (const { transport, memory, group } of groups) {
    Deno.bench({
      name: `${c.primitive} ${size.label} ${transport}/${memory}` +
        (size.ops > 1 ? ` (${size.ops} ops per iteration)` : ""),
      group: `${c.primitive} ${size.label}`,
      baseline: transport === "shm",
      n: c.count >= 1_048_576 ? 20 : 200,
      warmup: 5,
      async fn(b) {
        await group.prepare(index);
        b.start();
        await group.run(size.ops);
        b.end();
      },
    });
  }
}
