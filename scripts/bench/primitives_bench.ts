/**
 * `deno bench`: every primitive at 1 float, 64 KiB, 4 MiB and 64 MiB over each transport (shm,
 * worker, ws, tcp, and gpu where an adapter exists), 2 ranks. Groups are per primitive and size,
 * so transports compare side by side.
 * Ranks and buffers are set up outside the timed region; small sizes run a batch of operations
 * per benchmark iteration (named in the benchmark) so the launcher→ranks handoff (~tens of µs)
 * does not swamp them. For latency curves use the CLI (`deno task allreduce`).
 * @module
 */

import type { Communicator } from "../../core.ts";
import { joinAsRank0 } from "../../deno/mod.ts";
import type { RankGroup } from "../../core.ts";
import { launchGroup } from "../../deno/mod.ts";
import { gpuUnavailable } from "../../internal.ts";
import {
  type BenchCase,
  type BenchRankArgs,
  CaseRunner,
  COMMAND,
  COMMAND_TAG,
  MAILBOX,
} from "./bench_ranks.ts";
import { type Primitive, PRIMITIVES } from "../../bench/cases.ts";
import { TRANSPORT_NAMES, type TransportName, TRANSPORTS } from "../../deno/mod.ts";
import { DEFAULT_TIMEOUT_MS } from "../../internal.ts";
import { type MemoryKind } from "../../core.ts";

const RANKS = 2;
const SIZES = [
  { label: "1 float", count: 1, ops: 100 },
  { label: "64 KiB", count: 16_384, ops: 10 },
  { label: "4 MiB", count: 1_048_576, ops: 1 },
  { label: "64 MiB", count: 16_777_216, ops: 1 },
];

// A window of 64 messages holds 64 buffers: OSU's largest message, 4 MiB, at most.
const cases: BenchCase[] = (Object.keys(PRIMITIVES) as Primitive[]).flatMap((primitive) =>
  SIZES.filter((s) => !PRIMITIVES[primitive].windowed || s.count <= 1_048_576)
    .map((s) => ({ primitive, count: s.count }))
);
const RANK_MODULE = new URL("./bench_ranks.ts", import.meta.url);

/** Ranks that stay up between benchmarks and carry out commands. */
abstract class BenchGroup {
  #prepared = -1;

  /** Sets up case `index` on every rank (outside any timed region). */
  async prepare(index: number): Promise<void> {
    if (this.#prepared === index) return;
    await this.command(COMMAND.PREPARE, index, 0);
    this.#prepared = index;
  }

  /** Runs `ops` operations of the prepared case on every rank. */
  run(ops: number): Promise<void> {
    return this.command(COMMAND.RUN, this.#prepared, ops);
  }

  abstract stop(): Promise<void>;

  /** Has every rank carry out a command; resolves when all have. */
  protected abstract command(command: number, index: number, ops: number): Promise<void>;
}

/**
 * Ranks in workers (shm, worker) or logical ranks in one (gpu), commanded through a
 * SharedArrayBuffer mailbox.
 */
class WorkerGroup extends BenchGroup {
  readonly #box = new Int32Array(new SharedArrayBuffer((MAILBOX.DONE + RANKS) * 4));
  readonly #results: Promise<unknown>;
  #seq = 0;

  constructor(transport: TransportName, memory: MemoryKind) {
    super();
    const args: BenchRankArgs = { mailbox: this.#box.buffer as SharedArrayBuffer, cases, memory };
    this.#results = launchGroup(RANK_MODULE, { size: RANKS, transport, args }).results;
    this.#results.catch(() => {}); // surfaced by the next command
  }

  async stop(): Promise<void> {
    this.#box[MAILBOX.COMMAND] = COMMAND.STOP;
    Atomics.store(this.#box, MAILBOX.SEQ, ++this.#seq);
    Atomics.notify(this.#box, MAILBOX.SEQ);
    await this.#results;
  }

  protected async command(command: number, index: number, ops: number): Promise<void> {
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
        const waited = Atomics.waitAsync(box, MAILBOX.DONE + r, v, DEFAULT_TIMEOUT_MS);
        if (waited.async && (await Promise.race([waited.value, this.#results])) === "timed-out") {
          throw new Error(`bench ranks did not answer within ${DEFAULT_TIMEOUT_MS / 1000} s`);
        }
      }
    }
  }
}

/**
 * Process ranks (ws, tcp): this process is rank 0 and runs its part itself; it sends every other
 * rank (a subprocess) each command first. A dead process fails rank 0's next operation.
 */
class ProcessGroup extends BenchGroup {
  readonly #comm: Communicator;
  readonly #runner: CaseRunner;
  readonly #others: RankGroup<unknown>;

  private constructor(comm: Communicator, others: RankGroup<unknown>, memory: MemoryKind) {
    super();
    this.#comm = comm;
    this.#runner = new CaseRunner(comm, { cases, memory });
    this.#others = others;
  }

  static async start(transport: TransportName, memory: MemoryKind): Promise<ProcessGroup> {
    const args: BenchRankArgs = { cases, memory };
    const { comm, others } = await joinAsRank0(RANK_MODULE, { size: RANKS, transport, args });
    return new ProcessGroup(comm, others, memory);
  }

  async stop(): Promise<void> {
    await this.command(COMMAND.STOP, 0, 0);
    await this.#comm[Symbol.asyncDispose](); // the others close only once this rank does
    await this.#others.results;
  }

  protected async command(command: number, index: number, ops: number): Promise<void> {
    const message = Int32Array.of(command, index, ops);
    for (let r = 1; r < RANKS; r++) await this.#comm.send(message, r, { tag: COMMAND_TAG });
    await this.#runner.do(command, index, ops);
  }
}

/**
 * Every transport of the registry with its best memory kind, started as its row says; the gpu
 * transport only where a WebGPU adapter exists.
 */
const NO_GPU = await gpuUnavailable();
if (NO_GPU) console.error(`deno bench: the gpu transport is left out: ${NO_GPU}`);
const GROUPS = await Promise.all(
  TRANSPORT_NAMES.filter((t) => !(TRANSPORTS[t].needsDevice && NO_GPU)).map(async (transport) => {
    const { launch, bestMemory: memory } = TRANSPORTS[transport];
    const group = launch === "processes"
      ? await ProcessGroup.start(transport, memory)
      : new WorkerGroup(transport, memory);
    return { transport, memory, group };
  }),
);

globalThis.addEventListener("unload", () => GROUPS.forEach((t) => t.group.stop()));

for (const [index, c] of cases.entries()) {
  const size = SIZES.find((s) => s.count === c.count)!;
  for (const { transport, memory, group } of GROUPS) {
    Deno.bench({
      name: `${c.primitive} ${size.label} ${transport}/${memory}` +
        (size.ops > 1 ? ` (${size.ops} ops per iteration)` : ""),
      group: `${c.primitive} ${size.label}`,
      baseline: transport === TRANSPORT_NAMES[0],
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
