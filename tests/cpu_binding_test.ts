// Ranks a launcher places on one machine get a CPU each when they do not outnumber the CPUs
// (deno/platform/cpu_binding.ts), and none with DCCL_CPU_BIND=none: workers and processes.
import { assertEquals } from "./_assert.ts";
import { launchProcesses } from "../deno/launch/processes.ts";
import { allowedCpus } from "../deno/platform/scheduler_calls.ts";
import { runRanks } from "./_spawn_ranks.ts";

const CPUS = allowedCpus();
const linux = Deno.build.os === "linux";

/** What each of `size` ranks may run on when binding applies: a CPU of its own, in order. */
function expected(size: number): number[][] {
  return Array.from({ length: size }, (_, r) => size <= CPUS.length ? [CPUS[r]] : CPUS);
}

Deno.test({
  name:
    "cpu binding: worker ranks each get a CPU of their own, or all of them when they outnumber the CPUs",
  ignore: !linux,
  async fn() {
    for (const size of [2, CPUS.length + 1]) {
      const cpus = await runRanks<number[]>("cpu_rank.ts", { size, transport: "shm" });
      assertEquals(cpus, expected(size), `${size} ranks on CPUs ${CPUS}`);
    }
  },
});

Deno.test({
  name:
    "cpu binding: process ranks of the local launcher each get a CPU; DCCL_CPU_BIND=none leaves them all",
  ignore: !linux,
  async fn() {
    const module = new URL("./ranks/cpu_rank.ts", import.meta.url);
    const bound = await launchProcesses<number[]>(module, { size: 2, transport: "tcp" }).results;
    assertEquals(bound, expected(2));
    const free = await launchProcesses<number[]>(module, {
      size: 2,
      transport: "tcp",
      env: { DCCL_CPU_BIND: "none" },
    }).results;
    assertEquals(free, [CPUS, CPUS]);
  },
});
