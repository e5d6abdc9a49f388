// Calls in flight together (issue: correct under any call pattern): eight collectives and
// point-to-point exchanges of mixed sizes, dtypes, ops and roots, issued without awaiting, are
// exact on every transport at 2, 3 and 4 ranks.
import type { CheckCase } from "./ranks/check_rank.ts";
import { assertEquals } from "./_assert.ts";
import { gpuTest } from "./_gpu.ts";
import { launchGroup } from "../deno/launch/group.ts";
import { TRANSPORT_NAMES, TRANSPORTS } from "../deno/transport_table.ts";
import type { Dtype } from "../primitives/types.ts";
import type { TransportName } from "../deno/transport_table.ts";

const OVERLAP = new URL("./ranks/overlap_rank.ts", import.meta.url);

/** Message algorithms forced on shm: its waits block the thread, so these take turns. */
const MESSAGES: Partial<Record<CheckCase["primitive"], string>> = {
  allreduce: "ring",
  bcast: "binomial",
  reduce: "binomial",
  allgather: "ring",
  reduceScatter: "ring",
};

function cases(transport: TransportName, size: number, messages = false): CheckCase[] {
  const memory = TRANSPORTS[transport].bestMemory;
  // Device kernels have no 64-bit floats.
  const wide: Dtype = TRANSPORTS[transport].needsDevice ? "i32" : "f64";
  const c = (primitive: CheckCase["primitive"], count: number, more: Partial<CheckCase>) => ({
    primitive,
    count,
    memory,
    dtype: "f32" as Dtype,
    op: "sum" as const,
    root: 0,
    algorithm: (messages && MESSAGES[primitive]) || "auto",
    ...more,
  });
  return [
    c("allreduce", 1, {}),
    c("bcast", 1000, { dtype: wide, root: size - 1 }),
    c("reduce", 1 << 20, { op: "max", root: 1 }),
    c("sendrecv", 1 << 16, {}),
    c("allgather", 3000, { dtype: "i32" }),
    c("reduceScatter", 1 << 16, { dtype: "i32", op: "min" }),
    c("bcast", 1 << 18, { root: 0 }),
    c("allreduce", 1 << 20, { dtype: wide }),
  ];
}

for (const transport of TRANSPORT_NAMES) {
  const test = transport === "gpu"
    ? gpuTest
    : (name: string, fn: () => Promise<void>) => Deno.test(name, fn);
  test(`overlap: 8 calls in flight are exact at 2, 3 and 4 ranks: ${transport}`, async () => {
    for (const size of [2, 3, 4]) {
      const args = cases(transport, size);
      const results = await launchGroup<number[]>(OVERLAP, {
        size,
        transport,
        args,
        gpu: transport === "gpu",
      }).results;
      assertEquals(results, results.map(() => args.map(() => 0)), `${size} ranks`);
    }
  });
}

Deno.test("overlap: message algorithms forced on shm, with send/recv in flight, are exact", async () => {
  for (const size of [2, 3]) {
    const args = cases("shm", size, true);
    const results = await launchGroup<number[]>(OVERLAP, { size, transport: "shm", args }).results;
    assertEquals(results, results.map(() => args.map(() => 0)), `${size} ranks`);
  }
});
