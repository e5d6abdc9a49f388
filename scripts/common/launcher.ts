/**
 * How a task's ranks start, shared by the benchmark and training tasks: this machine starts them
 * (`--launcher local`, `--procs` ranks of `--transport`), or this process is one rank of a group an
 * external launcher started (`--launcher env`: torchrun, mpirun, srun; the group's size comes from
 * the environment, over a processes transport). `--bind` is where process ranks listen.
 * @module
 */

import { rankFromEnv } from "../../deno/mod.ts";
import {
  PROCESS_TRANSPORTS,
  TAB_TRANSPORT,
  TRANSPORT_NAMES,
  TRANSPORT_TABLE,
  type TransportName,
  TRANSPORTS,
} from "../../deno/mod.ts";
import { PROGRESS, type Progress } from "../../deno/mod.ts";
import { address, defineFlags, type Flags, UsageError } from "./flags.ts";
import { MAX_PROCS } from "./task.ts";

/** Most ranks of any transport's group (a simulated one's). */
const MAX_RANKS = Math.max(MAX_PROCS, ...TRANSPORT_NAMES.map((t) => TRANSPORTS[t].maxRanks ?? 0));

/** Launchers: start ranks here, or join a group an external launcher started. */
export const LAUNCHERS = ["local", "env"] as const;

/** The flags of where ranks run. */
export const LAUNCH_FLAGS = defineFlags({
  procs: {
    help: `number of ranks (at most ${MAX_PROCS}; a simulated group ${MAX_RANKS})`,
    kind: "integer",
    min: 1,
    max: MAX_RANKS,
    default: 2,
  },
  transport: {
    help: `transport: ${TRANSPORT_NAMES.join(", ")}`,
    kind: "choice",
    choices: TRANSPORT_NAMES,
    default: TRANSPORT_NAMES[0],
  },
  launcher: {
    help: "local (this machine starts the ranks) or env (this process is one rank of a group " +
      `started by torchrun/mpirun/srun; over ${PROCESS_TRANSPORTS[0]} unless --transport says)`,
    kind: "choice",
    choices: LAUNCHERS,
    default: "local",
  },
  bind: {
    help: "address ws and tcp ranks listen on (0.0.0.0: every interface); rank 0 is reached there",
    default: "127.0.0.1",
  },
  tabs: {
    help: "browser tabs that join the group over websocket, after the processes (each a host of " +
      "--threads ranks, its workers): a join link is printed (deno task browser opens headless " +
      "tabs on it)",
    kind: "integer",
    min: 0,
    max: 64,
    default: 0,
  },
  host: {
    help: "with --tabs: the address the join page, the hub and the Deno ranks listen on " +
      "(another than 127.0.0.1 serves a LAN)",
    default: "127.0.0.1",
  },
  progress: {
    help: "where a process rank's calls progress: inline (on its thread, as it awaits them) or " +
      "thread (on a progress thread of its own, while the rank computes; ws, tcp and shm, host " +
      "memory)",
    kind: "choice",
    choices: PROGRESS,
    default: "inline",
  },
  threads: {
    help: "ranks per process of ws or tcp, sharing memory over shm (nccl-tests' -t): procs × " +
      "threads ranks, with hierarchical algorithms",
    kind: "integer",
    min: 1,
    max: 64,
    default: 1,
  },
});

/** Where a task's ranks run. */
export interface Launch {
  launcher: typeof LAUNCHERS[number];
  transport: TransportName;
  /** Processes of the group (under `env`, the external launcher's). */
  procs: number;
  /** Ranks per process (a hierarchical group when above 1): `procs × threads` ranks in all. */
  threads: number;
  bind: string;
  /** Browser tabs joining the group after its processes (a mixed group, over websocket). */
  tabs: number;
  /** Where a mixed group listens. */
  host: string;
  /** Where a process rank's calls progress (`--progress`). */
  progress: Progress;
}

/** Ranks of the group `launch` starts: its processes' and its tabs' (each of its threads). */
export function groupSize(launch: Launch): number {
  return (launch.procs + launch.tabs) * launch.threads;
}

/**
 * The launch flags checked against each other: under `env`, or with `--threads` above 1
 * (processes of threads, as nccl-tests' `-t`), the transport defaults to the first processes
 * transport, and under `env` `--procs`, if given, must agree with the launcher's group.
 */
export function planLaunch(v: Flags<typeof LAUNCH_FLAGS>): Launch {
  const { launcher, threads, given, tabs } = v;
  const env = launcher === "env";
  const transport = tabs > 0 && !given.has("transport")
    ? TAB_TRANSPORT
    : (env || threads > 1) && !given.has("transport")
    ? PROCESS_TRANSPORTS[0]
    : v.transport;
  const host = address("host", v.host);
  if (tabs > 0) mixedGroup(v, transport, host);
  else if (given.has("host")) {
    throw new UsageError(`--host ${host} is not accepted without --tabs: give ranks --bind`);
  }
  const processes = TRANSPORTS[transport].launch === "processes";
  // A launcher's processes and processes of threads link over these (not the tab groups' own).
  const meshed = PROCESS_TRANSPORTS.includes(transport);
  if (env && !meshed) {
    throw new UsageError(
      `--launcher env runs over ${PROCESS_TRANSPORTS.join(" or ")}; --transport ${transport} ` +
        `is not accepted`,
    );
  }
  let procs = v.procs;
  if (env) {
    const size = envSize();
    if (given.has("procs") && procs !== size) {
      throw new UsageError(`--procs ${procs} disagrees with the launcher's ${size} ranks`);
    }
    procs = size;
  }
  if (threads > 1 && !processes) {
    throw new UsageError(
      `--threads ${threads} is not accepted with --transport ${transport}: a process's ranks ` +
        `share memory and processes link over ${PROCESS_TRANSPORTS.join(", ")} or ${TAB_TRANSPORT}`,
    );
  }
  const maxRanks = TRANSPORTS[transport].maxRanks ?? MAX_PROCS;
  if (procs * threads > maxRanks) {
    throw new UsageError(
      `--procs ${procs}${threads > 1 ? ` × --threads ${threads}` : ""} is not accepted: at most ` +
        `${maxRanks} ranks over ${transport}${
          maxRanks < MAX_RANKS ? ` (a simulated group, --transport sim, takes ${MAX_RANKS})` : ""
        }`,
    );
  }
  const bind = address("bind", v.bind);
  if (bind !== LAUNCH_FLAGS.bind.default && !processes) {
    throw new UsageError(
      `--bind ${bind} is not accepted: it applies to ranks that are processes ` +
        `(${PROCESS_TRANSPORTS.join(", ")}); ${transport} ranks are workers of this process`,
    );
  }
  if (processes) canListen(tabs > 0 ? host : bind);
  const progress = v.progress;
  // A process rank of ws or tcp, or a rank of the workers sharing memory (shm).
  const progressing = [...PROCESS_TRANSPORTS, TRANSPORT_TABLE.sharedMemory().name];
  if (progress === "thread" && (!progressing.includes(transport) || threads > 1 || tabs > 0)) {
    throw new UsageError(
      `--progress thread is not accepted with ${
        threads > 1
          ? `--threads ${threads}`
          : tabs > 0
          ? `--tabs ${tabs}`
          : `--transport ${transport}`
      }: a progress thread runs the communicator of a rank of ${
        progressing.join(", ")
      }, one rank per process or worker`,
    );
  }
  return { launcher, transport, procs, threads, bind, tabs, host, progress };
}

/** Refuses what a group with tabs cannot be: its links are websocket's, its processes local. */
function mixedGroup(v: Flags<typeof LAUNCH_FLAGS>, transport: TransportName, host: string): void {
  const refused = transport !== TAB_TRANSPORT
    ? `--transport ${transport}`
    : v.launcher !== "local"
    ? `--launcher ${v.launcher}`
    : v.given.has("bind")
    ? `--bind ${v.bind}`
    : undefined;
  if (refused) {
    throw new UsageError(
      `${refused} is not accepted with --tabs ${v.tabs}: tabs join local Deno processes over ` +
        `websocket (--host ${host} says where they listen)`,
    );
  }
}

function envSize(): number {
  try {
    return rankFromEnv().size;
  } catch (e) {
    throw new UsageError(`--launcher env: ${(e as Error).message}`);
  }
}

/** Refuses an address this machine cannot listen on (not one of its own, say). */
function canListen(bind: string): void {
  try {
    Deno.listen({ hostname: bind, port: 0 }).close();
  } catch (e) {
    throw new UsageError(
      `--bind ${bind} is not accepted: cannot listen there (${(e as Error).name}); use an ` +
        `address of this machine`,
    );
  }
}
