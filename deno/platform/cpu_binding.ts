/**
 * Where ranks run. Like Open MPI's binding to cores, the ranks a launcher places on one machine
 * each get a CPU of their own when they do not outnumber the CPUs this process may use: two ranks
 * left to share one CPU while another runs other work stay that way (the load looks balanced to
 * the kernel), and then every wait of one holds the core the other needs (docs/transports/shm.md,
 * "Waiting"). Ranks whose placement on the machine this process cannot know (an external
 * launcher that does not say the local rank) are left to the kernel. `DCCL_CPU_BIND=none` turns
 * binding off, as Open MPI's `--bind-to none` does.
 * @module
 */

import { allowedCpus, bindToCpu } from "./scheduler_calls.ts";

/**
 * The CPU for the `slot`-th of `slots` ranks on this machine, or undefined: no binding (a rank
 * alone on its machine waits for no neighbour, and is left to the kernel too).
 */
export function cpuForSlot(slot: number, slots: number): number | undefined {
  if (slots < 2 || bindingOff()) return undefined;
  const cpus = allowedCpus();
  return slots <= cpus.length ? cpus[slot] : undefined;
}

/** Binds the calling thread (a rank's) to `cpu`, if there is one. */
export function bindRankThread(cpu: number | undefined): void {
  if (cpu !== undefined) bindToCpu(cpu);
}

function bindingOff(): boolean {
  try {
    return Deno.env.get("DCCL_CPU_BIND") === "none";
  } catch {
    return false; // no env permission: the default
  }
}
