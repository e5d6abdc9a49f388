/**
 * Runs a dccl task on every host of a simulated cluster (cluster.ts) through the env launcher, as
 * an external launcher would: `procsPerHost` processes per host, each with `RANK`, `WORLD_SIZE`,
 * `MASTER_ADDR` (host 0), `MASTER_PORT`, the run's `DCCL_TOKEN` and `--bind` to its host's
 * address. The hosts share this machine's CPUs, so ranks are not bound to CPUs (binding by local
 * rank would put every host's first rank on one CPU).
 * @module
 */

import { rankRuntimeFlags } from "../../deno/mod.ts";
import type { ClusterHost } from "./netns.ts";

/** Options of {@linkcode runOnCluster}. */
export interface ClusterRunOptions {
  /** Processes per host. @default {1} */
  procsPerHost?: number;
  /** Rank 0's rendezvous port. @default {29500} */
  port?: number;
  /** Where each process's lines go: rank 0's stdout as it is, the rest prefixed by their rank. */
  onLine?: (rank: number, stream: "stdout" | "stderr", line: string) => void;
  /** Kills every process when it aborts. */
  signal?: AbortSignal;
}

/** How one process of a cluster run ended. */
export interface ClusterRankEnd {
  rank: number;
  host: string;
  code: number;
  /** The signal that killed it, if one did. */
  signal: Deno.Signal | null;
  /** When it exited (`performance.now()`): who failed first. */
  at: number;
}

/**
 * Exits this close together are told apart by how they ended, not by when the launcher heard of
 * them: a busy machine reports two children's exits in either order, and the ranks that outlive a
 * killed one exit within moments of its death.
 */
const TOGETHER_MS = 1000;

/**
 * The process whose failure came first, if any did: the earliest to end, unless a process killed
 * by a signal ended with it (the others exited on hearing of its death; a killed one says nothing).
 */
export function firstFailure(ends: readonly ClusterRankEnd[]): ClusterRankEnd | undefined {
  const failed = ends.filter((e) => e.code !== 0).sort((a, b) => a.at - b.at);
  const killed = failed.find((e) => e.signal !== null && e.at - failed[0].at < TOGETHER_MS);
  return killed ?? failed[0];
}

/** How a process ended, as a shell would say it: `exited 1`, `was killed by SIGKILL`. */
export function howItEnded(end: ClusterRankEnd): string {
  return end.signal ? `was killed by ${end.signal}` : `exited ${end.code}`;
}

/**
 * Runs `deno run -A <script> <args> --launcher env --bind <host>` as every rank; resolves with
 * every rank's exit, in rank order, once all have exited.
 */
export async function runOnCluster(
  hosts: readonly ClusterHost[],
  script: string,
  args: readonly string[],
  options: ClusterRunOptions = {},
): Promise<ClusterRankEnd[]> {
  const per = options.procsPerHost ?? 1;
  const size = hosts.length * per;
  const token = crypto.randomUUID();
  const onLine = options.onLine ?? printLine;
  const children: Deno.ChildProcess[] = [];
  const kill = () => {
    for (const child of children) {
      try {
        child.kill("SIGKILL");
      } catch { /* exited */ }
    }
  };
  options.signal?.addEventListener("abort", kill, { once: true });
  try {
    const ends = [];
    for (let rank = 0; rank < size; rank++) {
      const host = hosts[Math.floor(rank / per)];
      const child = new Deno.Command("ip", {
        args: [
          ...["netns", "exec", host.name, Deno.execPath(), "run", "-A", ...rankRuntimeFlags()],
          ...[script, ...args],
          ...["--launcher", "env", "--bind", host.address],
        ],
        env: {
          RANK: String(rank),
          WORLD_SIZE: String(size),
          MASTER_ADDR: hosts[0].address,
          MASTER_PORT: String(options.port ?? 29500),
          DCCL_TOKEN: token,
          DCCL_CPU_BIND: "none",
        },
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      children.push(child);
      const status = child.status.then((s) => ({ ...s, at: performance.now() }));
      ends.push(
        Promise.all([
          lines(child.stdout, (l) => onLine(rank, "stdout", l)),
          lines(child.stderr, (l) => onLine(rank, "stderr", l)),
        ]).then(() => status).then((s) => ({
          rank,
          host: host.name,
          code: s.code,
          signal: s.signal,
          at: s.at,
        })),
      );
    }
    return await Promise.all(ends);
  } finally {
    options.signal?.removeEventListener("abort", kill);
    kill();
  }
}

/** Rank 0's stdout as it is; every other line prefixed with its rank, on stderr or stdout. */
function printLine(rank: number, stream: "stdout" | "stderr", line: string): void {
  const text = rank === 0 && stream === "stdout" ? line : `[rank ${rank}] ${line}`;
  if (stream === "stdout") console.log(text);
  else console.error(text);
}

async function lines(stream: ReadableStream<Uint8Array>, each: (line: string) => void) {
  let rest = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    const parts = (rest + chunk).split("\n");
    rest = parts.pop()!;
    parts.forEach(each);
  }
  if (rest) each(rest);
}
