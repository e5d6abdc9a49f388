/**
 * Open MPI's side of `deno task vs-mpi`: the C harness beside this project (bench/mpi/mpi_coll.c)
 * built with mpicc and run under mpirun, on this machine or across a simulated cluster's hosts
 * (cluster.ts), writing dccl's CSV; busy loops that load the machine while both run; and the
 * table of dccl against Open MPI at every size, over alternating pairs of runs.
 * @module
 */

import type { Point } from "../../bench/compare/results.ts";
import type { ClusterHost } from "../cluster/netns.ts";
import { writeAtomically } from "../../deno/mod.ts";

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
  /** alltoallv's counts per size (mpi_coll.c's -v). */
  traffic?: string;
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
  if (run.traffic) args.push("-v", run.traffic);
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

/** One case's points: dccl's and Open MPI's, each run in every pair. */
export interface PairedCase {
  name: string;
  /** Each pair's points, by pair. */
  dccl: readonly (readonly Point[])[];
  mpi: readonly (readonly Point[])[];
}

/** The median of `values`. */
function median(values: readonly number[]): number {
  const s = values.toSorted((a, b) => a - b), mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/**
 * dccl against Open MPI at each size both measured (`counts` if given): each side's median time
 * over the pairs, their ratio (Open MPI's time over dccl's: above 1, dccl ahead) and a verdict —
 * `ahead` or `behind` where every pair agrees, `within noise` where pairs disagree, `one run`
 * with one pair (nothing decided). A line per case and size, units in the header; the rows of
 * ratios.csv alike.
 */
export function ratioTable(
  cases: readonly PairedCase[],
  counts?: readonly number[],
): { lines: string[]; rows: (string | number)[][] } {
  const pairs = cases[0]?.dccl.length ?? 0;
  const head = ["case".padEnd(26), "size".padStart(6)]
    .concat(["dccl µs", "MPI µs", "dccl Gb/s", "MPI Gb/s", "ratio"].map((h) => h.padStart(10)))
    .concat("  verdict");
  const lines = [head.join("")];
  const rows: (string | number)[][] = [[
    "case",
    "count",
    "dccl_time_us",
    "mpi_time_us",
    "ratio",
    "pairs_ahead",
    "pairs",
    "verdict",
  ]];
  for (const { name, dccl, mpi } of cases) {
    const sizes = [...new Set(dccl[0].map((p) => p.floats))].filter((c) =>
      (!counts || counts.includes(c)) && mpi[0].some((p) => p.floats === c)
    ).sort((a, b) => a - b);
    for (const count of sizes) {
      const at = (run: readonly Point[]) => run.find((p) => p.floats === count);
      const both = dccl.map((d, k) => [at(d), at(mpi[k])]).filter(([d, m]) => d && m) as Point[][];
      if (both.length === 0) continue;
      const [dUs, mUs] = [0, 1].map((side) => median(both.map((pair) => pair[side].time_us)));
      const ratio = mUs / dUs;
      const ahead = both.filter(([d, m]) => m.time_us > d.time_us).length;
      const verdict = both.length < 2
        ? "one run"
        : ahead === both.length
        ? "ahead"
        : ahead === 0
        ? "behind"
        : "within noise";
      const gbps = (us: number) => (count * 32 / us / 1e3).toFixed(count < 1024 ? 3 : 1);
      lines.push(
        [
          name.padEnd(26),
          `2^${Math.log2(count)}`.padStart(6),
          ...[dUs.toFixed(2), mUs.toFixed(2), gbps(dUs), gbps(mUs), `${ratio.toFixed(2)}x`]
            .map((c) => c.padStart(10)),
          `  ${verdict}${both.length > 1 ? ` (dccl ahead in ${ahead} of ${both.length})` : ""}`,
        ].join(""),
      );
      rows.push([name, count, dUs, mUs, Number(ratio.toFixed(3)), ahead, both.length, verdict]);
    }
  }
  if (pairs > 0) {
    lines.push(
      `# ratio = Open MPI's time / dccl's (above 1: dccl ahead), medians over ${pairs} ` +
        `alternating pair${pairs === 1 ? "" : "s"}; Gb/s = count × 32 bits / time`,
    );
  }
  return { lines, rows };
}

/** The first line that says something (Open MPI frames its messages in lines of dashes). */
function firstLine(bytes: Uint8Array): string {
  const lines = new TextDecoder().decode(bytes).split("\n").map((l) => l.trim());
  return lines.find((l) => l && !/^-+$/.test(l)) ?? "";
}
