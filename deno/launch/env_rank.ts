/**
 * Joining a group over a processes transport from an existing launcher's environment: torchrun
 * (`RANK`, `WORLD_SIZE`, `MASTER_ADDR`, `MASTER_PORT`), Open MPI (`OMPI_COMM_WORLD_RANK`/`_SIZE`),
 * PMI (`PMI_RANK`/`PMI_SIZE`, MPICH and Intel MPI) or Slurm (`SLURM_PROCID`/`SLURM_NTASKS`), the
 * group's token (`DCCL_TOKEN`, or one derived from the run id the launcher shares) and, optionally,
 * `DCCL_TRANSPORT` (the registry's first processes transport unless told).
 * @module
 */

import { calibrated } from "../../primitives/launch/calibration.ts";
import { Communicator } from "../../primitives/communicator/communicator.ts";
import { GpuDevice } from "../../primitives/memory/gpu_device.ts";
import { createHeapMemory, RankHeap } from "../../primitives/memory/heap.ts";
import { RankMemory } from "../../primitives/memory/rank_memory.ts";
import "../platform/install.ts";
import { PROCESS_TRANSPORTS, TRANSPORT_TABLE, type TransportName } from "../transport_table.ts";
import { bindRankThread, cpuForSlot } from "../platform/cpu_binding.ts";
import { PORT_MARK } from "../../primitives/launch/rank_report.ts";
import type { RankGroup } from "../../primitives/launch/supervisor.ts";
import { type HostPart, launchWorkers } from "../../primitives/launch/workers.ts";
import { RANK_RUNTIME } from "./rank_runtime.ts";
import { createHmac } from "node:crypto";
import { readUserSecret } from "./user_secret.ts";
import { joinOnProgressThread, PROGRESS, type Progress } from "./progress.ts";

/** Where a rank stands, read from the environment. */
export interface EnvRank {
  /** This process's rank. */
  rank: number;
  /** Ranks in the group. */
  size: number;
  /** Rank 0's host (`MASTER_ADDR`). */
  masterAddr: string;
  /** Rank 0's rendezvous port (`MASTER_PORT`); 0 on rank 0 lets the OS pick one. */
  masterPort: number;
  /** The run's token (`DCCL_TOKEN`, or derived from the launcher's run id: `tokenFrom`). */
  token: string;
  /** Where the token came from: `DCCL_TOKEN`, or the launcher's variable it was derived from. */
  tokenFrom: string;
  /** The per-user secret file the token was keyed with, when it was derived and one was read. */
  tokenSecret?: string;
  /** Which convention supplied rank and size. */
  source: string;
  /** The transport (`DCCL_TRANSPORT`; the registry's first processes transport unless set). */
  transport: TransportName;
  /** This process's place among the ranks on its machine, where the launcher says it. */
  local?: { rank: number; size: number };
}

/** Launchers' local rank and local size variables (Slurm's local size is not one variable). */
const LOCAL_CONVENTIONS: [string, string][] = [
  ["LOCAL_RANK", "LOCAL_WORLD_SIZE"],
  ["OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"],
  ["MPI_LOCALRANKID", "MPI_LOCALNRANKS"],
];

/**
 * Run ids launchers share with every rank of one run (and no other): Open MPI 4's job id, a PMIx
 * namespace (Open MPI 5, PRRTE), Slurm's job (with its step), torchrun's rendezvous id (`none`
 * when it was not given one: no id).
 */
const RUN_IDS: readonly string[] = [
  "OMPI_MCA_ess_base_jobid",
  "PMIX_NAMESPACE",
  "SLURM_JOB_ID",
  "TORCHELASTIC_RUN_ID",
];

/**
 * The group's token: `DCCL_TOKEN` when set, else an HMAC of the first run id the launcher shares
 * keyed with this user's secret (user_secret.ts), so ranks of one run accept each other, ranks of
 * another run are refused, and another local user, who can compute the run id, cannot compute the
 * token. Without a usable secret there is no token: a run id is public, so nothing is derived
 * from it alone (a one-line Error says how to set either).
 */
function tokenOf(
  env: Record<string, string | undefined>,
): Pick<EnvRank, "token" | "tokenFrom" | "tokenSecret"> {
  if (env.DCCL_TOKEN) return { token: env.DCCL_TOKEN, tokenFrom: "DCCL_TOKEN" };
  const from = RUN_IDS.find((v) => env[v] && env[v] !== "none");
  if (!from) {
    throw new Error(
      `DCCL_TOKEN is not set and the launcher shares no run id (${RUN_IDS.join(", ")}): ` +
        `export the same secret as DCCL_TOKEN for every rank of the run`,
    );
  }
  const id = from === "SLURM_JOB_ID" ? `${env[from]}.${env.SLURM_STEP_ID ?? ""}` : env[from];
  const runId = `dccl run ${from}=${id}`;
  const found = readUserSecret(env);
  if (!found.secret) {
    throw new Error(
      `DCCL_TOKEN is not set and there is no usable per-user secret to key ${from} with ` +
        `(${found.problem}): export the same secret as DCCL_TOKEN for every rank, or let dccl ` +
        `keep one in a config folder of yours (XDG_CONFIG_HOME or HOME, writable by you alone)`,
    );
  }
  const token = createHmac("sha256", found.secret).update(runId).digest("hex");
  return { token, tokenFrom: from, tokenSecret: found.path };
}

const CONVENTIONS: [string, string, string][] = [
  ["torchrun", "RANK", "WORLD_SIZE"],
  ["Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"],
  ["PMI", "PMI_RANK", "PMI_SIZE"],
  ["Slurm", "SLURM_PROCID", "SLURM_NTASKS"],
];

/**
 * Reads rank, size, rendezvous and token; throws a one-line Error naming what is missing, a value
 * that is not a plain decimal integer, or two launchers' variables that disagree.
 */
export function rankFromEnv(
  env?: Record<string, string | undefined>,
): EnvRank {
  env ??= Deno.env.toObject();
  const present = CONVENTIONS.filter(([, r, s]) => env[r] !== undefined && env[s] !== undefined);
  if (present.length === 0) {
    throw new Error(
      `no rank in the environment: set RANK and WORLD_SIZE, or run under mpirun (OMPI_COMM_WORLD_*), ` +
        `an MPI with PMI_RANK/PMI_SIZE, or srun (SLURM_PROCID/SLURM_NTASKS)`,
    );
  }
  const [source, rankVar, sizeVar] = present[0];
  const size = decimal(env, sizeVar), rank = decimal(env, rankVar);
  if (size < 1) throw new Error(`${sizeVar}=${env[sizeVar]} is not a size ≥ 1`);
  if (rank >= size) {
    throw new Error(`${rankVar}=${env[rankVar]} is not a rank from 0 to ${size - 1}`);
  }
  // Every launcher's variables must say the same (a launcher inside another sets both).
  for (const [, r, s] of present.slice(1)) {
    for (const [mine, theirs] of [[rankVar, r], [sizeVar, s]]) {
      if (decimal(env, theirs) !== decimal(env, mine)) {
        throw new Error(
          `${mine}=${env[mine]} and ${theirs}=${env[theirs]} disagree: unset the variables of ` +
            `the launcher that does not start dccl's ranks`,
        );
      }
    }
  }
  const masterPort = env.MASTER_PORT === undefined ? 29500 : decimal(env, "MASTER_PORT");
  if (masterPort > 65535) {
    throw new Error(`MASTER_PORT=${env.MASTER_PORT} is not a port from 1 to 65535`);
  }
  if (masterPort === 0 && rank !== 0) {
    throw new Error(
      `MASTER_PORT=0 only works for rank 0 (it picks a free port and prints it); ` +
        `rank ${rank} needs the port rank 0 picked`,
    );
  }
  const transport = processTransport(env.DCCL_TRANSPORT ?? PROCESS_TRANSPORTS[0]);
  return {
    ...{ rank, size, masterAddr: env.MASTER_ADDR ?? "127.0.0.1", masterPort, ...tokenOf(env) },
    ...{ source, transport, local: localPlace(env) },
  };
}

/** The local rank and size the launcher gives, if both are there and make sense. */
function localPlace(env: Record<string, string | undefined>): EnvRank["local"] {
  const found = LOCAL_CONVENTIONS.find(([r, s]) => env[r] !== undefined && env[s] !== undefined);
  if (!found) return undefined;
  const [rank, size] = found.map((name) => decimal(env, name));
  if (rank >= size) throw new Error(`${found[0]}=${rank} is not a rank below ${found[1]}=${size}`);
  return { rank, size };
}

/** The variable `name` as a plain decimal integer (no sign, exponent, hex or blank). */
function decimal(env: Record<string, string | undefined>, name: string): number {
  const value = env[name] ?? "";
  if (!/^(0|[1-9][0-9]{0,14})$/.test(value)) {
    throw new Error(`${name}=${JSON.stringify(value)} is not accepted: expected a decimal integer`);
  }
  return Number(value);
}

/** Options of {@linkcode joinFromEnv}. */
export interface JoinOptions {
  /** The transport, over `DCCL_TRANSPORT`. */
  transport?: TransportName;
  /** Address to listen on. @default {"127.0.0.1"} */
  bind?: string;
  /** Milliseconds for rendezvous and each wait. @default {30000} */
  timeoutMs?: number;
  /** Environment to read. @default {Deno.env.toObject()} */
  env?: Record<string, string | undefined>;
  /** Open a WebGPU device, for `gpu` and `managed` memory. @default {false} */
  gpu?: boolean;
  /**
   * Where calls progress: `inline` on this thread, as it awaits them, or `thread`, on a progress
   * thread of the rank's own, while this one computes (progress.ts). @default {`DCCL_PROGRESS`,
   * else "inline"}
   */
  progress?: "inline" | "thread";
}

/**
 * Joins the group the environment describes and returns a Communicator over its transport.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { joinFromEnv } from "./env_rank.ts";
 *
 * // What torchrun or mpirun would export; MASTER_PORT 0 lets rank 0 of a one-rank group pick one.
 * const env = { RANK: "0", WORLD_SIZE: "1", MASTER_PORT: "0", DCCL_TOKEN: "a secret" };
 * await using comm = await joinFromEnv({ env });
 * const one = Float32Array.of(comm.rank + 1);
 * await comm.allreduce(one);
 * assertEquals([comm.size, one[0]], [1, 1]);
 * ```
 */
export async function joinFromEnv(options?: JoinOptions): Promise<Communicator> {
  options ??= {};
  const env = options.env ?? Deno.env.toObject();
  const me = rankFromEnv(env);
  const progress = options.progress ?? progressFromEnv(env);
  if (progress === "thread" && options.gpu) {
    throw new Error(
      "a progress thread carries host buffers only: a rank with a WebGPU device runs inline",
    );
  }
  if (env.DCCL_WATCH_PARENT === "1") watchParent();
  if (me.local) bindRankThread(cpuForSlot(me.local.rank, me.local.size));
  if (progress === "thread") {
    const { timeoutMs, bind } = options;
    const transport = options.transport ?? me.transport;
    return await joinOnProgressThread(env, { timeoutMs, bind, transport });
  }
  return connectRank(me, options);
}

/**
 * `me`'s communicator over its transport, connected on this thread: what {@linkcode joinFromEnv}
 * makes once it has watched the launcher and bound the thread (a progress thread does neither).
 */
export async function connectRank(me: EnvRank, options: JoinOptions): Promise<Communicator> {
  const processes = TRANSPORT_TABLE.launchedAs(options.transport ?? me.transport, "processes");
  const transport = await processes.connect({
    ...me,
    bind: options.bind,
    timeoutMs: options.timeoutMs,
    // A launcher that let rank 0 pick the port reads it from this line and starts the others.
    onListening: (port) => me.masterPort === 0 && console.log(PORT_MARK + port),
  });
  const gpu = options.gpu ? await GpuDevice.open() : undefined;
  const memory = new RankMemory(new RankHeap(createHeapMemory()), gpu);
  return calibrated(new Communicator(transport, memory), transport);
}

/** `DCCL_PROGRESS`'s value, checked ("inline" when unset). */
export function progressFromEnv(env: Record<string, string | undefined>): Progress {
  const value = env.DCCL_PROGRESS ?? "inline";
  if ((PROGRESS as readonly string[]).includes(value)) return value as Progress;
  throw new Error(
    `DCCL_PROGRESS=${JSON.stringify(value)} is not accepted: expected ${PROGRESS.join(" or ")}`,
  );
}

/** Options of {@linkcode launchFromEnv}. */
export interface EnvGroupOptions extends JoinOptions {
  /** Ranks this process runs (a hierarchical group: hierarchy.ts). */
  threads: number;
  /** Passed to every rank's function. */
  args?: unknown;
  /** Name of the exported function each rank runs. @default {"run"} */
  entry?: string;
  /** Aborting stops this process's ranks. */
  signal?: AbortSignal;
}

/**
 * Runs `module`'s `run(comm, args)` on this process's `threads` ranks of the group the
 * environment describes — process `RANK` of `WORLD_SIZE` runs ranks `RANK × threads + t` — as
 * workers sharing memory, linked to the other processes' ranks over the transport; resolves with
 * what each of them returns.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { launchFromEnv } from "./env_rank.ts";
 *
 * // Process 0 of 1 (as mpirun -np 1 would export), running 2 ranks as workers sharing memory.
 * const env = { RANK: "0", WORLD_SIZE: "1", MASTER_PORT: "0", DCCL_TOKEN: "a secret" };
 * const module = new URL("../../examples/allreduce_rank.ts", import.meta.url);
 * assertEquals(await launchFromEnv<number>(module, { threads: 2, env }).results, [3, 3]);
 * ```
 */
export function launchFromEnv<T = unknown>(
  module: URL | string,
  options: EnvGroupOptions,
): RankGroup<T> {
  const me = rankFromEnv(options.env);
  const part = hostPartOf(me, options.threads, options.transport ?? me.transport, options.bind);
  const group = { ...options, size: options.threads, runtime: RANK_RUNTIME, placement: cpuForSlot };
  return launchWorkers<T>(module, { ...group, host: part });
}

/**
 * Process `me.rank`'s part of the hierarchical group the environment describes: `threads` ranks
 * linked over `transport`, listening on `bind`, placed on this machine's CPUs when the launcher
 * says where.
 */
export function hostPartOf(
  me: EnvRank,
  threads: number,
  transport: TransportName,
  bind?: string,
): HostPart {
  return {
    hosts: me.size,
    threads,
    host: me.rank,
    transport,
    mesh: { masterAddr: me.masterAddr, masterPort: me.masterPort, token: me.token, bind },
    cpus: me.local && { first: me.local.rank * threads, of: me.local.size * threads },
  };
}

/** `DCCL_TRANSPORT`'s value if it names a processes transport; else a one-line Error. */
function processTransport(value: string): TransportName {
  // Any transport of processes: dccl's own launcher starts a tab group's ranks this way too.
  const names = TRANSPORT_TABLE.launching("processes");
  const named = names.find((t) => t === value);
  if (named) return named;
  throw new Error(`DCCL_TRANSPORT=${value} is not accepted: expected ${names.join(" or ")}`);
}

/** Exits when the launching process goes away (its end of our stdin closes): no orphans. */
export function watchParent(): void {
  (async () => {
    const buf = new Uint8Array(64);
    while ((await Deno.stdin.read(buf)) !== null) { /* the launcher never writes */ }
    Deno.exit(137);
  })();
}
