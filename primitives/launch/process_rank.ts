/**
 * Entry point of a process rank started by the process launcher (processes.ts): joins the group
 * from the environment over its transport, runs the module's `run(comm, args)`, and reports on
 * marked stdout lines (report.ts): exit 0 with its result, or, on any error, exit 1 after telling
 * its peers (so they fail fast, naming this rank).
 * @module
 */

import { DEFAULT_TIMEOUT_MS } from "../types.ts";
import { joinFromEnv } from "./env_rank.ts";
import {
  ERROR_MARK,
  rankFunction,
  type RankReport,
  RESULT_MARK,
  RETURNED_MARK,
  runRank,
} from "./report.ts";

const env = Deno.env.toObject();

/** Prints a report for the launcher: a marked line (and an error on stderr too). */
function report(r: RankReport): void {
  if (r.type === "returned") console.log(RETURNED_MARK);
  else if (r.type === "done") console.log(RESULT_MARK + JSON.stringify(r.result ?? null));
  else {
    console.error(`${r.name}: ${r.message}`);
    const { type: _, stack: __, ...failure } = r;
    console.log(ERROR_MARK + JSON.stringify(failure));
  }
}

const connect = () =>
  joinFromEnv({
    timeoutMs: Number(env.DCCL_TIMEOUT_MS ?? DEFAULT_TIMEOUT_MS),
    bind: env.DCCL_BIND,
    gpu: env.DCCL_GPU === "1",
  });
const args = env.DCCL_ARGS_FILE ? JSON.parse(Deno.readTextFileSync(env.DCCL_ARGS_FILE)) : null;
const ok = await runRank(connect, () => rankFunction(env.DCCL_MODULE!, "run"), args, report);
Deno.exit(ok ? 0 : 1);
