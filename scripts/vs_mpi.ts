/**
 * `deno task vs-mpi [flags]`: dccl beside Open MPI in one run, each library measured with the
 * same sizes, exact inputs and time per op (sum of rank times / (ranks × iters)): Open MPI runs
 * the C harness in bench/mpi (built with mpicc), dccl its own tasks. Both are written as dccl
 * CSVs (`deno task compare` reads them) and a table gives dccl against Open MPI at every size,
 * with the ratio (above 1: dccl ahead). `--pairs N` measures both N times in alternating order
 * and decides each size ahead, behind or within noise. `--load N` runs N busy loops beside both
 * the whole time; `--cluster HOSTS` runs both across a simulated cluster (scripts/cluster/netns.ts).
 * @module
 */

import { stringify } from "../deno/mod.ts";
import { parse } from "csv-parse/sync";
import { pairwise, primitiveNamed } from "../bench/cases.ts";
import { trafficAt } from "../bench/cases/_traffic.ts";
import type { Point } from "../bench/compare/results.ts";
import {
  clusterDown,
  clusterHosts,
  clusterProblem,
  clusterUp,
  holdCluster,
} from "./cluster/netns.ts";
import { firstFailure, howItEnded, runOnCluster } from "./cluster/cluster_run.ts";
import { readResultsFile } from "../deno/mod.ts";
import {
  buildHarness,
  busyLoops,
  mpiMissing,
  type PairedCase,
  ratioTable,
  runMpi,
} from "./vs_mpi/open_mpi.ts";
import { writeAtomically } from "../deno/mod.ts";
import {
  PROCESS_TRANSPORTS,
  TRANSPORT_NAMES,
  type TransportName,
  TRANSPORTS,
} from "../deno/mod.ts";
import { runPlan } from "./bench/benchmark.ts";
import { BENCHMARK_FLAGS, planRun } from "./bench/benchmark_plan.ts";
import { defineFlags, parseFlags, size, UsageError, writableFolder } from "./common/flags.ts";
import { collectMetadata } from "./common/metadata.ts";
import { type Task, taskMain } from "./common/task.ts";

/** What the harness measures, as dccl's tasks name them. */
const PRIMITIVES = [
  "allreduce",
  "bcast",
  "reduce",
  "sendrecv",
  "latency",
  "bw",
  "bibw",
  "mbw_mr",
  "alltoallv",
] as const;
type Measured = typeof PRIMITIVES[number];

/** The transports whose ranks can be set beside Open MPI's processes. */
const HOST_TRANSPORTS = TRANSPORT_NAMES.filter((t) => TRANSPORTS[t].launch !== "thread");

const FLAGS = defineFlags({
  primitives: {
    help: `comma-separated: ${PRIMITIVES.join(", ")}`,
    kind: "list",
    choices: PRIMITIVES,
    default: ["allreduce", "bcast", "reduce"],
  },
  procs: {
    help: "comma-separated rank counts (sendrecv: 2 only; latency, bw, bibw, mbw_mr: even, in " +
      "pairs; with --cluster, multiples of the hosts: " +
      "the host count unless given)",
    kind: "integers",
    min: 1,
    max: 64,
    default: [2, 4],
  },
  transport: {
    help: "dccl's transport: shm or worker beside Open MPI's shared memory; ws or tcp beside " +
      "its TCP (on a cluster: ws unless told)",
    kind: "choice",
    choices: HOST_TRANSPORTS,
    default: HOST_TRANSPORTS[0],
  },
  max: { help: "largest buffer in floats (2^22, 4M, ...)", default: "4M" },
  sizes: { help: "comma-separated sizes the table shows (1,1K,64K; default: every size run)" },
  pairs: {
    help: "runs of both libraries, in alternating order: sizes are decided ahead, behind or " +
      "within noise where pairs disagree (8 decides sub-microsecond cells)",
    kind: "integer",
    min: 1,
    max: 64,
    default: 1,
  },
  load: {
    help: "busy loops beside both libraries the whole time (as LOAD=N of the shared tool)",
    kind: "integer",
    min: 0,
    max: 64,
    default: 0,
  },
  cluster: {
    help: "run across a simulated cluster of this many hosts (root, ip netns)",
    kind: "integer",
    min: 2,
    max: 16,
  },
  rate: {
    help: "with --cluster: each host's link rate, as tc writes it (5gbit)",
    default: "5gbit",
  },
  skew: { help: "alltoallv: generated traffic for both libraries, zipf:S[:SEED] (as the task's)" },
  matrix: {
    help: "alltoallv: an N×N traffic CSV for both libraries (as the task's)",
    path: true,
  },
  out: { help: "folder for the CSVs and ratios.csv", default: "out/vs-mpi", path: true },
});

interface VsMpiPlan {
  primitives: Measured[];
  procs: number[];
  transport: TransportName;
  maxCount: number;
  /** Sizes the table shows; every size when undefined. */
  sizes?: number[];
  pairs: number;
  load: number;
  cluster?: { hosts: number; rate: string };
  /** alltoallv's traffic flags, passed to dccl's task and made into Open MPI's counts. */
  traffic: string[];
  out: string;
}

const VS_MPI: Task<VsMpiPlan, typeof FLAGS> = {
  name: "vs-mpi",
  summary: "dccl beside Open MPI in one run: both libraries' CSVs and their ratio per size.",
  flags: FLAGS,
  async plan(v) {
    const { primitives, cluster: hosts, given } = v;
    const procs = hosts && !given.has("procs") ? [hosts] : v.procs;
    if (primitives.includes("sendrecv") && procs.some((p) => p !== 2)) {
      throw new UsageError("--primitives sendrecv runs on 2 ranks: give --procs 2");
    }
    if ((v.skew !== undefined || v.matrix !== undefined) && !primitives.includes("alltoallv")) {
      throw new UsageError(
        `--${v.skew !== undefined ? "skew" : "matrix"} is not accepted: it applies to alltoallv ` +
          "(add it to --primitives)",
      );
    }
    const paired = primitives.find((p) => pairwise(primitiveNamed(p)!));
    if (paired && procs.some((p) => p % 2 !== 0)) {
      throw new UsageError(`--primitives ${paired} runs on pairs of ranks: give even --procs`);
    }
    const uneven = hosts ? procs.find((p) => p % hosts !== 0) : undefined;
    if (uneven !== undefined) {
      throw new UsageError(`--procs ${uneven} is not accepted: a multiple of --cluster ${hosts}`);
    }
    const transport = hosts && !given.has("transport") ? PROCESS_TRANSPORTS[0] : v.transport;
    if (hosts && TRANSPORTS[transport].launch !== "processes") {
      throw new UsageError(
        `--cluster runs processes on hosts: --transport ${PROCESS_TRANSPORTS.join(" or ")}, ` +
          `not ${transport}`,
      );
    }
    const missing = await mpiMissing();
    if (missing) throw new UsageError(missing);
    if (hosts) {
      const problem = await clusterProblem();
      if (problem) throw new UsageError(`--cluster: ${problem}`);
    }
    const plan: VsMpiPlan = {
      primitives,
      procs,
      transport,
      maxCount: size("max", v.max, "f32"),
      sizes: v.sizes?.split(",").map((s) => size("sizes", s.trim(), "f32")),
      pairs: v.pairs,
      load: v.load,
      cluster: hosts ? { hosts, rate: v.rate } : undefined,
      traffic: [
        ...(v.skew !== undefined ? ["--skew", v.skew] : []),
        ...(v.matrix !== undefined ? ["--matrix", v.matrix] : []),
      ],
      out: writableFolder("out", v.out),
    };
    // dccl's own refusals (a size its buffers cannot hold, say) before either library runs.
    for (const primitive of primitives) {
      for (const p of procs) {
        planRun(
          primitiveNamed(primitive)!,
          parseFlags(BENCHMARK_FLAGS, dcclFlags(plan, primitive, p)),
        );
      }
    }
    return plan;
  },
  async run(plan, signal, argv) {
    Deno.mkdirSync(plan.out, { recursive: true });
    const binary = await buildHarness(plan.out);
    // The cluster's name first: a refusal leaves no busy loop behind.
    const hold = plan.cluster ? holdCluster(CLUSTER_NAME, "vs-mpi") : undefined;
    const stopLoops = busyLoops(plan.load);
    try {
      if (plan.cluster) await takeDownStaleCluster();
      const hosts = plan.cluster
        ? await clusterUp({ name: CLUSTER_NAME, ...plan.cluster, signal })
        : undefined;
      try {
        if (plan.load) console.log(`# with ${plan.load} busy loops beside both libraries`);
        if (hosts) console.log(`# ${hosts.length} hosts, links ${plan.cluster!.rate}`);
        const cases = await measurePairs(plan, binary, { argv, signal, hosts });
        const { lines, rows } = ratioTable(cases, plan.sizes);
        writeAtomically(`${plan.out}/ratios.csv`, stringify(rows));
        console.log(lines.join("\n"));
        console.log(
          `# files in ${plan.out}; curves: deno task compare ${plan.out}/dccl_*.csv ` +
            `${plan.out}/mpi_*.csv`,
        );
        return 0;
      } finally {
        if (hosts) await clusterDown(CLUSTER_NAME);
      }
    } finally {
      hold?.release();
      stopLoops();
    }
  },
};

/**
 * Every case, `plan.pairs` times: in each pair each rank count's Open MPI run and dccl's runs,
 * the order turned around from one pair to the next so that a drift of the machine weighs on
 * both alike. Each pair's CSVs go in `pair-<k>/`; the top folder gets, per size, the row of the
 * median run (one pair: its own rows), which `deno task compare` reads as the table does.
 */
async function measurePairs(
  plan: VsMpiPlan,
  binary: string,
  o: { argv: string[]; signal: AbortSignal; hosts?: Awaited<ReturnType<typeof clusterUp>> },
): Promise<PairedCase[]> {
  const t = plan.transport;
  const cases = new Map<string, { dccl: Point[][]; mpi: Point[][] }>();
  const files = new Map<string, string[]>();
  const note = (path: string, run: string) => files.set(path, [...(files.get(path) ?? []), run]);
  for (let k = 0; k < plan.pairs; k++) {
    const folder = plan.pairs === 1 ? plan.out : `${plan.out}/pair-${k + 1}`;
    Deno.mkdirSync(folder, { recursive: true });
    const pair = plan.pairs === 1 ? "" : `pair ${k + 1} of ${plan.pairs}: `;
    for (const procs of plan.procs) {
      const mpiCsv = `${folder}/mpi_${procs}.csv`;
      const mpiRun = async () => {
        console.error(`dccl vs-mpi: ${pair}Open MPI on ${procs} ranks …`);
        await runMpi({
          binary,
          procs,
          primitives: plan.primitives,
          maxCount: plan.maxCount,
          csv: mpiCsv,
          traffic: plan.primitives.includes("alltoallv")
            ? trafficFile(plan, procs, `${folder}/traffic_${procs}.txt`)
            : undefined,
          tcp: TRANSPORTS[t].launch === "processes",
          hosts: o.hosts,
          signal: o.signal,
        });
      };
      const dcclRuns = async () => {
        for (const primitive of plan.primitives) {
          console.error(`dccl vs-mpi: ${pair}dccl ${primitive} on ${procs} ranks (${t}) …`);
          const csv = `${folder}/dccl_${primitive}_${t}_${procs}.csv`;
          await runDccl({ plan, primitive, procs, csv, ...o });
          note(`dccl_${primitive}_${t}_${procs}.csv`, csv);
        }
      };
      // Open MPI first in odd pairs, dccl first in even ones.
      for (const run of k % 2 === 0 ? [mpiRun, dcclRuns] : [dcclRuns, mpiRun]) await run();
      note(`mpi_${procs}.csv`, mpiCsv);
      const mpi = await Array.fromAsync(readResultsFile(mpiCsv));
      for (const primitive of plan.primitives) {
        const name = `${primitive} ${procs} ranks ${t}`;
        const csv = `${folder}/dccl_${primitive}_${t}_${procs}.csv`;
        const c = cases.get(name) ?? { dccl: [], mpi: [] };
        c.dccl.push(await Array.fromAsync(readResultsFile(csv)));
        c.mpi.push(mpi.filter((p: Point) => p.primitive === primitive));
        cases.set(name, c);
      }
    }
  }
  if (plan.pairs > 1) {
    for (const [name, runs] of files) medianRows(runs, `${plan.out}/${name}`);
  }
  return [...cases].map(([name, c]) => ({ name, ...c }));
}

/** Writes, per primitive and size, the row of `runs` (CSV files) whose time is the median. */
function medianRows(runs: readonly string[], path: string): void {
  const tables = runs.map((run) =>
    parse(Deno.readTextFileSync(run), { columns: true }) as Record<string, string>[]
  );
  const header = Object.keys(tables[0][0] ?? {});
  const rows = tables[0].map((first) => {
    const key = (r: Record<string, string>) => `${r.primitive} ${r.count ?? r.floats}`;
    const same = tables.map((t) => t.find((r) => key(r) === key(first))).filter((r) => r);
    const sorted = same.toSorted((a, b) => Number(a!.time_us) - Number(b!.time_us));
    return header.map((c) => sorted[(sorted.length - 1) >> 1]![c]);
  });
  writeAtomically(path, stringify([header, ...rows]));
}

/** The cluster vs-mpi makes for itself. */
const CLUSTER_NAME = "vsmpi";

/**
 * Removes a vs-mpi cluster that a killed run (SIGKILL leaves no time to clean) left up. Called
 * with the name held, so no running vs-mpi owns it.
 */
async function takeDownStaleCluster(): Promise<void> {
  if ((await clusterHosts(CLUSTER_NAME)).length === 0) return;
  console.error(`# removing cluster ${CLUSTER_NAME}, left up by an earlier run that was killed`);
  await clusterDown(CLUSTER_NAME);
}

/**
 * Open MPI's alltoallv counts for `procs` ranks, written to `path`: for each size dccl's task
 * runs, its mean count then the N×N counts it scales its traffic to (the same rounding), so both
 * libraries move the same blocks.
 */
function trafficFile(plan: VsMpiPlan, procs: number, path: string): string {
  const dccl = planRun(
    "alltoallv",
    parseFlags(BENCHMARK_FLAGS, dcclFlags(plan, "alltoallv", procs)),
  );
  const lines = dccl.sweep.counts.map((count) =>
    [count, ...trafficAt(dccl.sweep.traffic, procs, count).counts.flat()].join(" ")
  );
  writeAtomically(path, lines.join("\n") + "\n");
  return path;
}

/** The flags of dccl's task for `primitive` in `plan` (on `procs` ranks, where given). */
function dcclFlags(plan: VsMpiPlan, primitive: Measured, procs?: number): string[] {
  return [
    ...["--transport", plan.transport, "--max", String(plan.maxCount)],
    ...(primitive === "alltoallv" ? plan.traffic : []),
    ...(procs === undefined ? [] : ["--procs", `${procs}`]),
  ];
}

/** dccl's side of one case: in this process's launcher, or as ranks on the cluster's hosts. */
async function runDccl(o: {
  plan: VsMpiPlan;
  primitive: Measured;
  procs: number;
  csv: string;
  argv: string[];
  signal: AbortSignal;
  hosts?: Awaited<ReturnType<typeof clusterUp>>;
}): Promise<void> {
  if (o.hosts) {
    const script = new URL(`./${o.primitive}.ts`, import.meta.url).pathname;
    const flags = [...dcclFlags(o.plan, o.primitive), "--csv", o.csv];
    const ends = await runOnCluster(o.hosts, script, flags, {
      procsPerHost: o.procs / o.hosts.length,
      signal: o.signal,
      onLine: () => {},
    });
    const failed = firstFailure(ends);
    if (failed) throw new Error(`dccl ${o.primitive}: rank ${failed.rank} ${howItEnded(failed)}`);
    return;
  }
  const plan = planRun(
    primitiveNamed(o.primitive)!,
    parseFlags(BENCHMARK_FLAGS, [...dcclFlags(o.plan, o.primitive, o.procs), "--csv", o.csv]),
  );
  const metadata = await collectMetadata(o.argv, { ...plan.sweep, procs: plan.procs });
  const summary = await runPlan(plan, { table: false, metadata, signal: o.signal });
  if (summary.wrong > 0) throw new Error(`dccl ${o.primitive}: ${summary.wrong} wrong elements`);
}

Deno.exit(await taskMain(VS_MPI, Deno.args));
