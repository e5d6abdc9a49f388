/**
 * Open MPI's side of `deno task vs-mpi`: the C harness beside this project (bench/mpi/mpi_coll.c)
 * built with mpicc and run under mpirun, on this machine or across a simulated cluster's hosts
 * (cluster.ts), writing dccl's CSV; busy loops that load the machine while both run; and the
 * table of dccl against Open MPI at the sizes the docs quote.
 * @module
 */

import type { Point } from "../../bench/compare/results.ts";
import type { ClusterHost } from "./cluster.ts";
import { writeAtomically } from "../files/atomic_file.ts";

/** Why Open MPI cannot be built and run here (one line with the command that installs it). */
export async function mpiMissing(): Promise<string | undefined> {
  for (const tool of ["mpicc", "mpirun"]) {
    // A missing program throws at once, not in the promise.
    const found = await (async () =>
      (await new Deno.Command(tool, { args: ["--version"], stdout: "null", stderr: "null" })
        .output()).success)().catch(() =>
        false);
    if (!found) {
      return `${tool} is not installed: apt-get install -y openmpi-bin libopenmpi-dev ` +
        `(Debian, Ubuntu), then run this again`;
    }
  }
  return undefined;
}

/** Builds the harness into `folder`; its path. */
export async function buildHarness(folder: string): Promise<string> {
  const source = new URL("../../bench/mpi/mpi_coll.c", import.meta.url).pathname;
  const binary = `${folder}/mpi_coll`;
  const out = await new Deno.Command("mpicc", {
    args: ["-O2", "-o", binary, source],
    stderr: "piped",
  })
    .output();
  if (!out.success) {
    throw new Error(`mpicc could not build ${source}: ${firstLine(out.stderr)}`);
  }
  return binary;
}

/** One Open MPI run of the harness. */
export interface MpiRun {
  /** The harness (from {@linkcode buildHarness}). */
  binary: string;
  procs: number;
  primitives: readonly string[];
  /** Largest count, floats. */
  maxCount: number;
  /** Where its CSV goes. */
  csv: string;
  /** Over TCP (as dccl's processes transports) rather than Open MPI's shared memory. */
  tcp: boolean;
  /** The cluster's hosts to place the ranks on (as many on each, in rank order), if any. */
  hosts?: readonly ClusterHost[];
  signal?: AbortSignal;
}

/**
 * Runs the harness under mpirun; on a cluster Open MPI's daemons start in each host's namespace
 * (bench/mpi/netns_rsh.sh), and a start that crashes (they sometimes do in namespaces) is tried
 * twice more.
 */
export async function runMpi(run: MpiRun): Promise<void> {
  const args = ["--allow-run-as-root", "--oversubscribe", "-np", String(run.procs)];
  if (run.hosts) {
    const perHost = Math.ceil(run.procs / run.hosts.length);
    const subnet = run.hosts[0].address.split(".").slice(0, 3).join(".") + ".0/24";
    args.push(
      ...["--host", run.hosts.map((h) => `${h.name}:${perHost}`).join(",")],
      ...[
        "--mca",
        "plm_rsh_agent",
        new URL("../../bench/mpi/netns_rsh.sh", import.meta.url).pathname,
      ],
      ...["--mca", "btl_tcp_if_include", subnet, "--mca", "oob_tcp_if_include", subnet],
      // Each namespace's daemon would bind its ranks to core 0 of a node it thinks is its own.
      "--bind-to",
      "none",
    );
  }
  if (run.tcp || run.hosts) args.push("--mca", "btl", "tcp,self");
  if (run.tcp && !run.hosts) args.push("--mca", "btl_tcp_if_include", "lo");
  if (run.procs > navigator.hardwareConcurrency) args.push("--mca", "mpi_yield_when_idle", "1");
  args.push(run.binary, "-m", String(run.maxCount), "-p", run.primitives.join(","));
  let why = "";
  for (let attempt = 0; attempt < (run.hosts ? 3 : 1); attempt++) {
    // On a cluster mpirun itself runs on the first host: its daemons call back to it there.
    const [command, ...rest] = run.hosts
      ? ["ip", "netns", "exec", run.hosts[0].name, "mpirun", ...args]
      : ["mpirun", ...args];
    const child = new Deno.Command(command, { args: rest, stdout: "piped", stderr: "piped" })
      .spawn();
    const stop = () => {
      try {
        child.kill("SIGTERM");
      } catch { /* it has exited */ }
    };
    run.signal?.addEventListener("abort", stop, { once: true });
    const out = await child.output();
    run.signal?.removeEventListener("abort", stop);
    run.signal?.throwIfAborted();
    const text = new TextDecoder().decode(out.stdout);
    if (out.success) {
      writeAtomically(run.csv, text);
      return;
    }
    why = firstLine(out.stderr) || `exit ${out.code}`;
  }
  throw new Error(`Open MPI failed on ${run.procs} ranks: ${why}`);
}

/** `n` busy loops on this machine until the returned function stops them. */
export function busyLoops(n: number): () => void {
  const loops = Array.from(
    { length: n },
    () => new Deno.Command("sh", { args: ["-c", "while :; do :; done"] }).spawn(),
  );
  return () => {
    for (const loop of loops) {
      try {
        loop.kill("SIGKILL");
      } catch { /* gone */ }
    }
  };
}

/** The sizes the comparison table shows, floats (those up to the sweep's largest). */
export const TABLE_COUNTS = [1, 2 ** 10, 2 ** 16, 2 ** 20, 2 ** 22];

/**
 * One line per case of dccl against Open MPI: small sizes (below 2^10 floats) as dccl's time over
 * MPI's, larger ones as Gb/s, each with the ratio (above 1: dccl ahead).
 */
export function ratioTable(
  cases: readonly { name: string; dccl: readonly Point[]; mpi: readonly Point[] }[],
  maxCount: number,
): { lines: string[]; rows: (string | number)[][] } {
  const counts = TABLE_COUNTS.filter((c) => c <= maxCount);
  const lines = [
    "case".padEnd(28) + counts.map((c) => `2^${Math.log2(c)}`.padStart(22)).join(""),
  ];
  const rows: (string | number)[][] = [["case", "count", "dccl_time_us", "mpi_time_us", "ratio"]];
  for (const { name, dccl, mpi } of cases) {
    const cells = counts.map((count) => {
      const d = dccl.find((p) => p.floats === count), m = mpi.find((p) => p.floats === count);
      if (!d || !m) return "-";
      const ratio = m.time_us / d.time_us;
      rows.push([name, count, d.time_us, m.time_us, Number(ratio.toFixed(3))]);
      return count < 1024
        ? `${d.time_us.toFixed(2)}/${m.time_us.toFixed(2)}us ${ratio.toFixed(2)}x`
        : `${d.gbps.toFixed(1)}/${m.gbps.toFixed(1)} ${ratio.toFixed(2)}x`;
    });
    lines.push(name.padEnd(28) + cells.map((c) => c.padStart(22)).join(""));
  }
  return { lines, rows };
}

/** The first line that says something (Open MPI frames its messages in lines of dashes). */
function firstLine(bytes: Uint8Array): string {
  const lines = new TextDecoder().decode(bytes).split("\n").map((l) => l.trim());
  return lines.find((l) => l && !/^-+$/.test(l)) ?? "";
}
