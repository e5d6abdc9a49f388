// `avg` of i32 is the true mean truncated toward zero, whatever the sum does to i32 (it would
// wrap), on every transport, in host and device memory, for allreduce, reduce and
// reduce-scatter; checked against BigInt sums.
import { assertEquals } from "./_assert.ts";
import { gpuTest } from "./_gpu.ts";
import { launchGroup } from "../deno/launch/group.ts";
import { TRANSPORT_NAMES, type TransportName, TRANSPORTS } from "../deno/transport_table.ts";
import type { MemoryKind } from "../primitives/types.ts";
import { terms } from "./ranks/mean_rank.ts";

const MEAN = new URL("./ranks/mean_rank.ts", import.meta.url);

/** The truncated mean of every rank's terms, element by element. */
function means(size: number, length: number): number[] {
  const all = Array.from({ length: size }, (_, r) => terms(r, length));
  return Array.from({ length }, (_, i) => {
    const sum = all.reduce((s, t) => s + BigInt(t[i]), 0n);
    return Number(sum / BigInt(size)); // BigInt division truncates toward zero
  });
}

async function check(transport: TransportName, memory: MemoryKind, gpu: boolean) {
  for (const size of [2, 3, 4]) {
    const n = 7;
    const results = await launchGroup<Record<string, number[]>>(MEAN, {
      size,
      transport,
      gpu,
      args: { memory, n },
    }).results;
    const mean = means(size, n * size);
    results.forEach((got, rank) => {
      const what = `${transport}, ${memory}, rank ${rank} of ${size}`;
      assertEquals(got.allreduce, mean, `${what}: allreduce`);
      const root = rank === size - 1;
      assertEquals(got.reduce, root ? mean : Array.from(terms(rank, n * size)), `${what}: reduce`);
      assertEquals(
        got.reduceScatter,
        mean.slice(rank * n, (rank + 1) * n),
        `${what}: reduceScatter`,
      );
    });
  }
}

for (const transport of TRANSPORT_NAMES) {
  const { bestMemory, needsDevice } = TRANSPORTS[transport];
  if (needsDevice) {
    gpuTest(
      `exact mean: i32 avg is the truncated true mean: ${transport}`,
      () => check(transport, bestMemory, true),
    );
  } else {
    Deno.test(`exact mean: i32 avg is the truncated true mean: ${transport}`, () =>
      check(transport, bestMemory, false));
  }
}

gpuTest(
  "exact mean: i32 avg of device buffers over a host transport: shm, gpu memory",
  () => check("shm", "gpu", true),
);
