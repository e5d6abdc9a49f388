// Calls whose buffers overlap, in flight together, give what they give run one after another in
// issue order, as calls on one NCCL stream: every collective kind on the same buffer twice,
// partial overlaps, a send's buffer received into and a received buffer reduced, on every
// transport, in host and device memory.
import { assertEquals } from "./_assert.ts";
import { gpuTest } from "./_gpu.ts";
import { launchGroup } from "../deno/launch/group.ts";
import { TRANSPORT_NAMES, type TransportName, TRANSPORTS } from "../deno/transport_table.ts";
import type { MemoryKind } from "../primitives/types.ts";
import { type HazardArgs, SCENARIOS } from "./ranks/hazard_rank.ts";

const HAZARD = new URL("./ranks/hazard_rank.ts", import.meta.url);
const NAMES = Object.keys(SCENARIOS);

async function check(transport: TransportName, memory: MemoryKind, sizes: number[]) {
  for (const size of sizes) {
    for (const count of [1, 65537]) {
      const args: HazardArgs = { memory, count, scenarios: NAMES };
      const results = await launchGroup<number[]>(HAZARD, {
        size,
        transport,
        args,
        gpu: TRANSPORTS[transport].needsDevice || memory === "gpu",
      }).results;
      const differ = (r: number[]) => Object.fromEntries(NAMES.map((n, i) => [n, r[i]]));
      assertEquals(
        results.map(differ),
        results.map(() => differ(NAMES.map(() => 0))),
        `${transport}, ${memory} memory, ${size} ranks, ${count} elements a block`,
      );
    }
  }
}

for (const transport of TRANSPORT_NAMES) {
  const { bestMemory, needsDevice } = TRANSPORTS[transport];
  const memories: MemoryKind[] = needsDevice
    ? [bestMemory]
    : [...new Set<MemoryKind>([bestMemory, "host"])];
  const test = needsDevice
    ? gpuTest
    : (name: string, fn: () => Promise<void>) => Deno.test(name, fn);
  test(`hazards: overlapping calls give the issue-order result: ${transport}`, async () => {
    for (const memory of memories) await check(transport, memory, [2, 3]);
  });
}

gpuTest(
  "hazards: overlapping calls on device buffers over a host transport: tcp, gpu memory",
  () => check("tcp", "gpu", [2]),
);
