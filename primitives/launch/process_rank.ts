/**
 * Entry point of a process rank started by `spawnProcesses`: joins the `ws` group from the
 * environment, runs the module's `run(comm, args)`, prints the result for the launcher and exits
 * 0; on any error it tells its peers (so they fail fast, naming this rank), reports the error to
 * the launcher on a marked line, and exits 1.
 * @module
 */

import type { Communicator } from "../communicator.ts";
import { DEFAULT_TIMEOUT_MS } from "../types.ts";
import { joinFromEnv } from "./env_rank.ts";
import { failureReport } from "./report.ts";
import { ERROR_MARK, RESULT_MARK, RETURNED_MARK } from "./spawn_processes.ts";

const env = Deno.env.toObject();
let comm: Communicator | undefined;
try {
  comm = await joinFromEnv({
    timeoutMs: Number(env.DCCL_TIMEOUT_MS ?? DEFAULT_TIMEOUT_MS),
    bind: env.DCCL_BIND,
    gpu: env.DCCL_GPU === "1",
  });
  const mod = await import(env.DCCL_MODULE!);
  if (typeof mod.run !== "function") throw new TypeError(`${env.DCCL_MODULE} exports no run()`);
  const args = env.DCCL_ARGS_FILE ? JSON.parse(Deno.readTextFileSync(env.DCCL_ARGS_FILE)) : null;
  const result = await mod.run(comm, args);
  console.log(RETURNED_MARK);
  await comm[Symbol.asyncDispose]();
  console.log(RESULT_MARK + JSON.stringify(result ?? null));
} catch (err) {
  const e = err instanceof Error ? err : new Error(String(err));
  await comm?.abort(e).catch(() => {});
  console.error(`${e.name}: ${e.message}`);
  const { stack: _, ...report } = failureReport(e);
  console.log(ERROR_MARK + JSON.stringify(report));
  Deno.exit(1);
}
Deno.exit(0);
