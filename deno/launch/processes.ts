/**
 * The local launcher of processes transports (`ws`, `tcp`): starts `size` Deno subprocesses on
 * this machine with torchrun-style variables (a rendezvous on 127.0.0.1 at a port rank 0 picks, a
 * random per-run token) and prefixes their output with their rank. When one fails it blames the
 * rank that caused it (each child reports its error on a marked stdout line) and stops every other
 * child.
 * @module
 */

import { rankRuntimeFlags } from "./runtime_flags.ts";
import { calibrated } from "../../primitives/launch/calibration.ts";
import { Communicator } from "../../primitives/communicator/communicator.ts";
import { createHeapMemory, RankHeap } from "../../primitives/memory/heap.ts";
import { RankMemory } from "../../primitives/memory/rank_memory.ts";
import "../platform/install.ts";
import { PROCESS_TRANSPORTS, TRANSPORT_TABLE, type TransportName } from "../transport_table.ts";
import { DEFAULT_TIMEOUT_MS } from "../../primitives/types.ts";
import { failedEnd, parseMarked } from "../../primitives/launch/rank_report.ts";
import {
  checkSize,
  deadlines,
  type GroupOptions,
  type RankGroup,
  Supervisor,
} from "../../primitives/launch/supervisor.ts";

/** Options of {@linkcode runProcessRanks}. */
export interface ProcessRanksOptions {
  /** Number of ranks (processes). */
  size: number;
  /** Extra environment for every child. */
  env?: Record<string, string>;
  /** Rendezvous host. @default {"127.0.0.1"} */
  masterAddr?: string;
  /** Aborting kills every child and rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Receives each output line; the default prints it with a `[rank r]` prefix. */
  onLine?: (rank: number, stream: "stdout" | "stderr", line: string) => void;
  /**
   * Rank 0 runs in this process and already listens on `port` with `token`: start ranks 1 …
   * size−1 only, to join it.
   */
  joinRank0?: { port: number; token: string };
  /**
   * The group meets at a hub this process serves already (a mixed group's: mixed_group.ts):
   * every process, rank 0 too, joins it at `port` with `token`. Ranks size … size+others−1 are
   * not processes; `watch` reports how they end to the supervisor, and `stop` ends them.
   */
  hub?: {
    port: number;
    token: string;
    others: number;
    watch(supervisor: Supervisor<unknown>): void;
    stop(): Promise<void>;
  };
  /**
   * The ranks' timeout: once one has failed, the others have this long to exit before they are
   * stopped. @default {30000}
   */
  timeoutMs?: number;
  /**
   * Milliseconds the other ranks have to exit once one has exited 0; a rank still running then
   * is stuck (the group fails, naming it). @default {2 × timeoutMs}
   */
  stragglerMs?: number;
  /** Address every rank listens on (`DCCL_BIND`). @default {"127.0.0.1"} */
  bind?: string;
  /** The transport linking the ranks (`DCCL_TRANSPORT`). @default {the registry's first} */
  transport?: TransportName;
  /**
   * Ranks each process runs as workers sharing memory (`DCCL_THREADS`, a hierarchical group:
   * hierarchy.ts): `size × threads` ranks, rank `process × threads + t`. @default {1}
   */
  threads?: number;
}

/** Every child process of this module's groups that is still running (for leak checks). */
const LIVE = new Set<ProcessRank>();
/** Child processes started by this module that are still running (for leak checks). */
export function liveProcesses(): number {
  return LIVE.size;
}

/** Prints rank 0's stdout as is (the program's output) and prefixes every other line. */
export function printLine(rank: number, stream: "stdout" | "stderr", line: string): void {
  if (rank === 0 && stream === "stdout") console.log(line);
  else if (stream === "stdout") console.log(`[rank ${rank}] ${line}`);
  else console.error(`[rank ${rank}] ${line}`);
}

/** What every process of one group shares: how it starts, what it is told, whom it reports to. */
interface ProcessGroup {
  denoArgs: string[];
  options: ProcessRanksOptions;
  size: number;
  threads: number;
  token: string;
  supervisor: Supervisor<unknown>;
  onLine: NonNullable<ProcessRanksOptions["onLine"]>;
  /** Rank 0 said which port it listens on. */
  onPort(port: number): void;
}

/**
 * One process of a group: `threads` ranks from `process × threads`, started on rank 0's `port`
 * (0 for rank 0 itself). It reads the process's marked lines (results, calls, reports, rank 0's
 * port) as they come, and once the process has exited tells the supervisor how each of its ranks
 * ended.
 */
class ProcessRank {
  readonly #group: ProcessGroup;
  readonly #process: number;
  readonly #child: Deno.ChildProcess;
  readonly #results: unknown[] = [];
  /** Each of its ranks' latest calls, as its last lines said (for the verdict). */
  readonly #calls: ([number, number][] | undefined)[] = [];
  /** The first `error:` line the process printed on stderr (an uncaught error), for its blame. */
  #firstError: string | undefined;
  /** Resolves once the process has exited and its lines were read, and its ranks are judged. */
  readonly ended: Promise<void>;

  constructor(group: ProcessGroup, process: number, port: number) {
    this.#group = group;
    this.#process = process;
    const { options, size, threads } = group;
    this.#child = new Deno.Command(Deno.execPath(), {
      args: group.denoArgs,
      env: {
        ...options.env,
        RANK: String(process),
        LOCAL_RANK: String(process),
        LOCAL_WORLD_SIZE: String(size),
        WORLD_SIZE: String(size),
        MASTER_ADDR: options.masterAddr ?? "127.0.0.1",
        MASTER_PORT: String(port),
        DCCL_TOKEN: group.token,
        DCCL_WATCH_PARENT: "1",
        DCCL_TRANSPORT: options.transport ?? PROCESS_TRANSPORTS[0],
        ...(options.bind ? { DCCL_BIND: options.bind } : {}),
        ...(threads > 1 ? { DCCL_THREADS: String(threads) } : {}),
      },
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    LIVE.add(this);
    this.ended = this.#end();
  }

  /** The group-wide ranks it runs. */
  get ranks(): number[] {
    const t = this.#group.threads;
    return Array.from({ length: t }, (_, i) => this.#process * t + i);
  }

  /** Sends the process `signal` (nothing once it is gone). */
  kill(signal: Deno.Signal): void {
    try {
      this.#child.kill(signal);
    } catch { /* already gone */ }
  }

  /** One line of its stdout: a marked report, or the program's own output. */
  #stdout = (line: string): void => {
    const group = this.#group;
    const marked = parseMarked(line);
    if (!marked) return group.onLine(this.#process, "stdout", line);
    if (marked.kind === "port") return void (this.#process === 0 && group.onPort(marked.port));
    // A process of several ranks names the rank; one of one rank is that rank.
    const of = marked.rank ?? this.#process * group.threads;
    if (marked.kind === "result") this.#results[of] = marked.result;
    else if (marked.kind === "calls") this.#calls[of] = marked.calls;
    else if (marked.kind === "returned") group.supervisor.returned(of);
    else group.supervisor.ended(of, failedEnd(marked.failure));
  };

  #stderr = (line: string): void => {
    const plain = stripAnsi(line);
    if (/^error: /.test(plain)) this.#firstError ??= plain.slice("error: ".length);
    this.#group.onLine(this.#process, "stderr", line);
  };

  async #end(): Promise<void> {
    const pumps = [pump(this.#child.stdout, this.#stdout), pump(this.#child.stderr, this.#stderr)];
    const status = await this.#child.status;
    LIVE.delete(this);
    await Promise.all(pumps);
    // Each rank of the process ends as the process did, unless it reported otherwise.
    const which = this.#group.threads > 1
      ? `process ${this.#process} (ranks ${this.ranks.join(", ")})`
      : `rank ${this.#process}`;
    for (const r of this.ranks) {
      this.#group.supervisor.ended(
        r,
        status.success
          ? { status: "ok", result: this.#results[r], calls: this.#calls[r] }
          : status.signal
          ? { status: "killed", reason: `${which} was killed by ${status.signal}` }
          : {
            status: "failed",
            reason: `${which} exited with code ${status.code}${
              this.#firstError ? `: ${this.#firstError}` : ""
            }`,
          },
      );
    }
  }
}

/**
 * Runs `deno <denoArgs>` as ranks 0 … size−1; `results` resolves when all exit 0 (with each
 * rank's stdout line marked as a result, if any) and rejects with a `RankFailedError` naming the
 * rank that caused the failure (primitives/launch/blame.ts), once every child has exited. Rank 0
 * binds an ephemeral port itself and announces it; only then do the others start (a free port
 * picked here and handed over would race with every other program).
 */
export function runProcessRanks(
  denoArgs: string[],
  options: ProcessRanksOptions,
): RankGroup<unknown> {
  const size = checkSize(options.size);
  const threads = checkSize(options.threads ?? 1);
  if (threads > 1 && options.joinRank0) {
    throw new RangeError("this process cannot be rank 0 of a group of processes × threads");
  }
  const processes: ProcessRank[] = [];
  const signalAll = (signal: Deno.Signal) => processes.forEach((p) => p.kill(signal));
  // Every child must be gone before the group settles: no orphans.
  let allExited!: () => void;
  const exited = new Promise<void>((resolve) => allExited = resolve);
  const supervisor = new Supervisor<unknown>(
    size * threads + (options.hub?.others ?? 0),
    deadlines(options),
    {
      // Children tell each other (their sockets close with the failed rank's code).
      relay() {},
      async stop() {
        signalAll("SIGTERM");
        // A stopped (SIGSTOP) or busy child may not act on SIGTERM.
        const hard = setTimeout(() => signalAll("SIGKILL"), 500);
        await Promise.all([exited, options.hub?.stop()]);
        clearTimeout(hard);
        options.signal?.removeEventListener("abort", onAbort);
      },
    },
  );
  const onAbort = () => supervisor.cancel(options.signal?.reason);
  options.signal?.addEventListener("abort", onAbort, { once: true });
  const group: ProcessGroup = {
    denoArgs,
    options,
    size,
    threads,
    token: options.joinRank0?.token ?? options.hub?.token ?? randomToken(),
    supervisor,
    onLine: options.onLine ?? printLine,
    onPort(port) {
      if (supervisor.judged) return;
      for (let p = 1; p < size; p++) processes[p] = new ProcessRank(group, p, port);
    },
  };
  if (options.joinRank0) group.onPort(options.joinRank0.port);
  else if (options.hub) {
    processes[0] = new ProcessRank(group, 0, options.hub.port);
    group.onPort(options.hub.port);
    options.hub.watch(supervisor);
  } else processes[0] = new ProcessRank(group, 0, 0);
  (async () => {
    // Rank 0's output is read before its exit counts, so the others have started by then.
    for (let waited = 0; waited < processes.filter(Boolean).length;) {
      const started = processes.filter(Boolean);
      waited = started.length;
      await Promise.all(started.map((p) => p.ended));
    }
    allExited();
    await supervisor.judge();
  })();

  return {
    results: supervisor.results,
    kill(rank: number) {
      processes[Math.floor(rank / threads)]?.kill("SIGKILL");
    },
  };
}

function stripAnsi(text: string): string {
  // deno-lint-ignore no-control-regex
  return text.replace(/\x1b\[[0-9;]*m/g, "");
}

/** A fresh secret for one run's connections. */
export function randomToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

async function pump(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void) {
  let rest = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    const lines = (rest + chunk).split("\n");
    rest = lines.pop()!;
    lines.forEach(onLine);
  }
  if (rest) onLine(rest);
}

/** Options of {@linkcode launchProcesses}. */
export interface ProcessesOptions
  extends
    Omit<GroupOptions, "transport">,
    Omit<ProcessRanksOptions, "size" | "transport" | "stragglerMs"> {
  /** The transport linking the ranks. @default {the table's first processes transport} */
  transport?: TransportName;
}

/**
 * Runs `module`'s `run(comm, args)` on `size` local subprocesses linked by a processes transport
 * (the registry's first unless told); each rank's result comes back as JSON.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { launchProcesses } from "./processes.ts";
 *
 * const module = new URL("../../examples/allreduce_rank.ts", import.meta.url);
 * const group = launchProcesses<number>(module, { size: 2, transport: "tcp" });
 * assertEquals(await group.results, [3, 3]);
 * ```
 */
export function launchProcesses<T = unknown>(
  module: URL | string,
  options: ProcessesOptions,
): RankGroup<T> {
  const entry = new URL("./process_rank.ts", import.meta.url).href;
  // Arguments go through a file: environment strings are limited to 128 KiB on Linux.
  const argsFile = Deno.makeTempFileSync({ prefix: "dccl-args-", suffix: ".json" });
  Deno.writeTextFileSync(argsFile, JSON.stringify(options.args ?? null));
  const group = runProcessRanks(["run", "-A", ...rankRuntimeFlags(), entry], {
    ...options,
    env: {
      ...options.env,
      DCCL_MODULE: module.toString(),
      DCCL_ARGS_FILE: argsFile,
      DCCL_TIMEOUT_MS: String(options.timeoutMs ?? DEFAULT_TIMEOUT_MS),
      DCCL_GPU: options.gpu ? "1" : "0",
    },
  });
  group.results.finally(() => Deno.removeSync(argsFile)).catch(() => {});
  return group as RankGroup<T>;
}

/**
 * Makes this process rank 0 of a group over a processes transport (the registry's first unless
 * told) and starts ranks 1 … size−1 as subprocesses running `module`'s `run(comm, args)`;
 * resolves once all are connected. `others` settles when they exit, which is once rank 0 has
 * closed too (closing waits for every rank's goodbye).
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { joinAsRank0 } from "./processes.ts";
 *
 * // This process is rank 0; ranks 1 and 2 run examples/allreduce_rank.ts in processes of their own.
 * const module = new URL("../../examples/allreduce_rank.ts", import.meta.url);
 * const { comm, others } = await joinAsRank0(module, { size: 3 });
 * const buf = comm.alloc(1 << 20, { memory: "shared" });
 * buf.view.fill(comm.rank + 1);
 * await comm.allreduce(buf); // rank 0's part, here
 * await comm[Symbol.asyncDispose]();
 * assertEquals([buf.view[0], await others.results], [6, [undefined, 6, 6]]);
 * ```
 */
export async function joinAsRank0(
  module: URL | string,
  options: ProcessesOptions,
): Promise<{ comm: Communicator; others: RankGroup<unknown> }> {
  const token = randomToken();
  let others: RankGroup<unknown> | undefined;
  const transport = options.transport ?? PROCESS_TRANSPORTS[0];
  const connected = await TRANSPORT_TABLE.launchedAs(transport, "processes").connect({
    ...{ rank: 0, size: options.size, masterAddr: "127.0.0.1", masterPort: 0, token },
    timeoutMs: options.timeoutMs,
    onListening: (port) => {
      others = launchProcesses(module, { ...options, transport, joinRank0: { port, token } });
      // A rank that fails closes its sockets too, so rank 0's operations fail, naming it.
      others.results.catch(() => {});
    },
  });
  const comm = new Communicator(connected, new RankMemory(new RankHeap(createHeapMemory())));
  return { comm: await calibrated(comm, connected), others: others! };
}
