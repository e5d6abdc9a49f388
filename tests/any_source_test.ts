// Receives from any rank (recv(buf, "any")): messages arrive whole, in sending order, with their
// sender's rank, where a receive in rank order would never finish; every transport, and device
// buffers both on the gpu transport and staged over shm.
import { assertEquals, assertRejects } from "./_assert.ts";
import { gpuTest } from "./_gpu.ts";
import { ROUNDS } from "./ranks/any_source_rank.ts";
import { liveWorkers } from "../primitives/launch/workers.ts";
import { launchGroup } from "../deno/launch/group.ts";
import { liveProcesses } from "../deno/launch/processes.ts";
import type { MemoryKind } from "../primitives/types.ts";
import type { TransportName } from "../deno/transport_table.ts";

const RANK = new URL("./ranks/any_source_rank.ts", import.meta.url);

async function anySource(transport: TransportName, size: number, memory: MemoryKind) {
  for (const count of [1, 70_000]) {
    const gpu = memory === "gpu" || transport === "gpu";
    const [got] = await launchGroup<number[][]>(RANK, {
      size,
      transport,
      args: { count, memory },
      gpu,
    }).results;
    const sent: number[][] = [];
    for (let r = size - 1; r > 0; r--) {
      for (let round = 0; round < ROUNDS; round++) sent.push([r, r * 100 + round, r * 100 + round]);
    }
    assertEquals(got, sent, `${count} floats`);
  }
  assertEquals([liveWorkers(), liveProcesses()], [0, 0]);
}

for (const transport of ["shm", "worker", "ws", "tcp"] as const) {
  Deno.test(`recv from any rank: ${transport}, 4 ranks`, () => anySource(transport, 4, "host"));
}
gpuTest("recv from any rank: gpu transport, 3 logical ranks", () => anySource("gpu", 3, "gpu"));
gpuTest("recv from any rank: gpu memory staged over shm", () => anySource("shm", 3, "gpu"));

Deno.test("recv from any rank on a group of one is a RangeError", async () => {
  const module = new URL(
    "data:application/typescript," + encodeURIComponent(
      `export async function run(comm) { await comm.recv(comm.alloc(1), "any"); }`,
    ),
  );
  await assertRejects(
    () => launchGroup(module, { size: 1, transport: "shm" }).results,
    { message: /only one/ },
  );
});
