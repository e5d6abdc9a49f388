/**
 * Entry point of a process started by the process launcher (processes.ts): joins the group from
 * the environment over its transport, runs the module's `run(comm, args)`, and reports on marked
 * stdout lines (rank_report.ts): exit 0 with its result, or, on any error, exit 1 after telling its
 * peers (so they fail fast, naming this rank). With `DCCL_THREADS` > 1 the process runs that many
 * ranks of a hierarchical group as workers (hierarchy.ts) and relays each one's reports.
 * @module
 */

import { DEFAULT_TIMEOUT_MS } from "../../primitives/types.ts";
import { hostPartOf, joinFromEnv, rankFromEnv, watchParent } from "./env_rank.ts";
import {
  PORT_MARK,
  printReport,
  rankFunction,
  runRank,
} from "../../primitives/launch/rank_report.ts";
import { launchWorkers } from "../../primitives/launch/workers.ts";
import { cpuForSlot } from "../platform/cpu_binding.ts";
import { RANK_RUNTIME } from "./rank_runtime.ts";

const env = Deno.env.toObject();
const threads = Number(env.DCCL_THREADS ?? "1");
const timeoutMs = Number(env.DCCL_TIMEOUT_MS ?? DEFAULT_TIMEOUT_MS);
const gpu = env.DCCL_GPU === "1";
const args = env.DCCL_ARGS_FILE ? JSON.parse(Deno.readTextFileSync(env.DCCL_ARGS_FILE)) : null;

let ok: boolean;
if (threads > 1) {
  const me = rankFromEnv(env);
  if (env.DCCL_WATCH_PARENT === "1") watchParent();
  const options = {
    size: threads,
    timeoutMs,
    gpu,
    args,
    runtime: RANK_RUNTIME,
    placement: cpuForSlot,
  };
  const group = launchWorkers(env.DCCL_MODULE!, {
    ...options,
    host: {
      ...hostPartOf(me, threads, me.transport, env.DCCL_BIND),
      onReport: (rank, report) => printReport(report, rank),
      // The launcher starts the other processes once rank 0 says where it listens.
      onPort: (port) => console.log(PORT_MARK + port),
    },
  });
  ok = await group.results.then(() => true, () => false);
} else {
  const connect = () => joinFromEnv({ timeoutMs, bind: env.DCCL_BIND, gpu });
  ok = await runRank(
    { connect, fn: () => rankFunction(env.DCCL_MODULE!, "run"), args },
    printReport,
  );
}
Deno.exit(ok ? 0 : 1);
