/**
 * Entry point of a process rank started by `spawnProcesses`: joins the `ws` group from the
 * environment, runs the module's `run(comm, args)`, prints the result for the launcher and exits
 * non-zero on any error (which fails the group).
 * @module
 */

import { joinFromEnv } from "./env_rank.ts";
import { RESULT_MARK } from "./spawn_processes.ts";

const env = Deno.env.toObject();
try {
  await using comm = await joinFromEnv({ timeoutMs: Number(env.DCCL_TIMEOUT_MS ?? 30_000) });
  const mod = await import(env.DCCL_MODULE!);
  if (typeof mod.run !== "function") throw new TypeError(`${env.DCCL_MODULE} exports no run()`);
  const args = env.DCCL_ARGS_FILE ? JSON.parse(Deno.readTextFileSync(env.DCCL_ARGS_FILE)) : null;
  const result = await mod.run(comm, args);
  console.log(RESULT_MARK + JSON.stringify(result ?? null));
} catch (e) {
  console.error(`${(e as Error).name}: ${(e as Error).message}`);
  Deno.exit(1);
}
Deno.exit(0);
