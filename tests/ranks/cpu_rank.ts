// Rank program for tests/cpu_binding_test.ts: the CPUs this rank's thread may run on.
import type { Communicator } from "../../mod.ts";
import { allowedCpus } from "../../deno/platform/scheduler_calls.ts";

export async function run(comm: Communicator): Promise<number[]> {
  await comm.barrier();
  return allowedCpus();
}
