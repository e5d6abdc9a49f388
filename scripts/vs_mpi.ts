/**
 * `deno task vs-mpi [flags]`: dccl beside Open MPI in one run, each library measured with the
 * same sizes, exact inputs and time per op (sum of rank times / (ranks × iters)): Open MPI runs
 * the C harness in bench/mpi (built with mpicc), dccl its own tasks. Both are written as dccl
 * CSVs (`deno task compare` reads them) and a table gives dccl against Open MPI per size, with
 * the ratio (above 1: dccl ahead). `--load N` runs N busy loops beside both the whole time;
 * `--cluster HOSTS` runs both across a simulated cluster (deno/bench/cluster.ts).
 * @module
 */

import { stringify } from "csv-stringify/sync";
import { type PrimitiveName } from "../bench/cases.ts";
import type { Point } from "../bench/compare/results.ts";
import { clusterDown, clusterProblem, clusterUp, holdCluster } from "../deno/bench/cluster.ts";
import { firstFailure, howItEnded, runOnCluster } from "../deno/bench/cluster_run.ts";
import { readResultsFile } from "../deno/bench/result_files.ts";
import { buildHarness, busyLoops, mpiMissing, ratioTable, runMpi } from "../deno/bench/vs_mpi.ts";
import { writeAtomically } from "../deno/files/atomic_file.ts";
import {
  PROCESS_TRANSPORTS,
  TRANSPORT_NAMES,
  type TransportName,
  TRANSPORTS,
} from "../deno/registry.ts";
import { runPlan } from "./_benchmark.ts";
import { BENCHMARK_FLAGS, planRun } from "./_benchmark_plan.ts";
import {
  type FlagSpec,
  givenFlags,
  integer,
  listOf,
  oneOf,
  size,
  UsageError,
  writableFolder,
} from "./_flags.ts";
import { collectMetadata } from "./_metadata.ts";
import { type Task, taskMain } from "./_task.ts";

/** What the harness measures, as dccl's tasks name them. */
const PRIMITIVES = ["allreduce", "bcast", "reduce", "sendrecv"] as const;

const FLAGS: Record<string, FlagSpec> = {
  primitives: {
    help: `comma-separated: ${PRIMITIVES.join(", ")}`,
    default: "allreduce,bcast,reduce",
  },
  procs: {
    help:
      "comma-separated rank counts (sendrecv: 2 only; with --cluster, multiples of the hosts: " +
      "the host count unless given)",
    default: "2,4",
  },
  transport: {
    help: "dccl's transport: shm or worker beside Open MPI's shared memory; ws or tcp beside " +
      "its TCP (on a cluster: ws unless told)",
    default: TRANSPORT_NAMES[0],
  },
  max: { help: "largest buffer in floats (2^22, 4M, ...)", default: "4M" },
  load: {
    help: "busy loops beside both libraries the whole time (as LOAD=N of the shared tool)",
    default: "0",
  },
  cluster: { help: "run across a simulated cluster of this many hosts (root, ip netns)" },
  rate: {
    help: "with --cluster: each host's link rate, as tc writes it (5gbit)",
    default: "5gbit",
  },
  out: { help: "folder for the CSVs and ratios.csv", default: "out/vs-mpi", path: true },
};

interface VsMpiPlan {
  primitives: PrimitiveName[];
  procs: number[];
  transport: TransportName;
  maxCount: number;
  load: number;
  cluster?: { hosts: number; rate: string };
  out: string;
}

const VS_MPI: Task<VsMpiPlan> = {
  name: "vs-mpi",
  summary: "dccl beside Open MPI in one run: both libraries' CSVs and their ratio per size.",
  flags: FLAGS,
  async plan(v, _, argv) {
    const primitives = listOf("primitives", v.primitives!, PRIMITIVES);
    const hosts = v.cluster === undefined ? undefined : integer("cluster", v.cluster, 2, 16);
    const given = givenFlags(argv);
    const procs = (hosts && !given.has("procs") ? String(hosts) : v.procs!).split(",")
      .map((p) => integer("procs", p.trim(), 1, 64));
    if (primitives.includes("sendrecv") && procs.some((p) => p !== 2)) {
      throw new UsageError("--primitives sendrecv runs on 2 ranks: give --procs 2");
    }
    const uneven = hosts ? procs.find((p) => p % hosts !== 0) : undefined;
    if (uneven !== undefined) {
      throw new UsageError(`--procs ${uneven} is not accepted: a multiple of --cluster ${hosts}`);
    }
    const hostTransports = TRANSPORT_NAMES.filter((t) => TRANSPORTS[t].launch !== "thread");
    const transport = oneOf(
      "transport",
      hosts && !given.has("transport") ? PROCESS_TRANSPORTS[0] : v.transport!,
      hostTransports,
    );
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
    return {
      primitives,
      procs,
      transport,
      maxCount: size("max", v.max!, "f32"),
      load: integer("load", v.load!, 0, 64),
      cluster: hosts ? { hosts, rate: v.rate! } : undefined,
      out: writableFolder("out", v.out!),
    };
  },
  async run(plan, signal, argv) {
    Deno.mkdirSync(plan.out, { recursive: true });
    const binary = await buildHarness(plan.out);
    // The cluster's name first: a refusal leaves no busy loop behind.
    const hold = plan.cluster ? holdCluster(CLUSTER_NAME, "vs-mpi") : undefined;
    const stopLoops = busyLoops(plan.load);
    try {
      const hosts = plan.cluster
        ? await clusterUp({ name: CLUSTER_NAME, ...plan.cluster, signal })
        : undefined;
      try {
        if (plan.load) console.log(`# with ${plan.load} busy loops beside both libraries`);
        if (hosts) console.log(`# ${hosts.length} hosts, links ${plan.cluster!.rate}`);
        const cases = [];
        for (const procs of plan.procs) {
          const mpiCsv = `${plan.out}/mpi_${procs}.csv`;
          await runMpi({
            binary,
            procs,
            primitives: plan.primitives,
            maxCount: plan.maxCount,
            csv: mpiCsv,
            tcp: TRANSPORTS[plan.transport].launch === "processes",
            hosts,
            signal,
          });
          const mpi = await Array.fromAsync(readResultsFile(mpiCsv));
          for (const primitive of plan.primitives) {
            const csv = `${plan.out}/dccl_${primitive}_${plan.transport}_${procs}.csv`;
            await runDccl({ plan, primitive, procs, csv, argv, signal, hosts });
            cases.push({
              name: `${primitive} ${procs} ranks ${plan.transport}`,
              dccl: await Array.fromAsync(readResultsFile(csv)),
              mpi: mpi.filter((p: Point) => p.primitive === primitive),
            });
          }
        }
        const { lines, rows } = ratioTable(cases, plan.maxCount);
        writeAtomically(`${plan.out}/ratios.csv`, stringify(rows));
        console.log(lines.join("\n"));
        console.log(
          `# dccl / Open MPI: time below 2^10 floats, Gb/s above; the ratio > 1: dccl ahead.\n` +
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

/** The cluster vs-mpi makes for itself. */
const CLUSTER_NAME = "vsmpi";

/** dccl's side of one case: in this process's launcher, or as ranks on the cluster's hosts. */
async function runDccl(o: {
  plan: VsMpiPlan;
  primitive: PrimitiveName;
  procs: number;
  csv: string;
  argv: string[];
  signal: AbortSignal;
  hosts?: Awaited<ReturnType<typeof clusterUp>>;
}): Promise<void> {
  const flags = ["--transport", o.plan.transport, "--max", String(o.plan.maxCount), "--csv", o.csv];
  if (o.hosts) {
    const script = new URL(`./${o.primitive}.ts`, import.meta.url).pathname;
    const ends = await runOnCluster(o.hosts, script, flags, {
      procsPerHost: o.procs / o.hosts.length,
      signal: o.signal,
      onLine: () => {},
    });
    const failed = firstFailure(ends);
    if (failed) throw new Error(`dccl ${o.primitive}: rank ${failed.rank} ${howItEnded(failed)}`);
    return;
  }
  const values = Object.fromEntries(
    Object.entries(BENCHMARK_FLAGS).map(([name, f]) => [name, f.default]),
  );
  const plan = planRun(o.primitive, {
    ...values,
    procs: String(o.procs),
    transport: o.plan.transport,
    max: String(o.plan.maxCount),
    csv: o.csv,
  }, { given: new Set(["max", "procs", "transport"]) });
  const metadata = await collectMetadata(o.argv, { ...plan.sweep, procs: plan.procs });
  const summary = await runPlan(plan, { table: false, metadata, signal: o.signal });
  if (summary.wrong > 0) throw new Error(`dccl ${o.primitive}: ${summary.wrong} wrong elements`);
}

Deno.exit(await taskMain(VS_MPI, Deno.args));
