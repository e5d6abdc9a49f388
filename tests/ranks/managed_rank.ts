// Rank program for the managed-buffer test: page runs migrate on demand and are counted. It runs
// in a rank worker so that its WebGPU device is torn down by the launcher (tests/_gpu.ts).
import type { Communicator } from "../../mod.ts";
import { assertEquals } from "../_assert.ts";
import { createHeapMemory, RankHeap } from "../../primitives/memory/heap.ts";
import { MANAGED_PAGE_BYTES, ManagedBuffer } from "../../primitives/memory/managed.ts";

export async function run(comm: Communicator): Promise<void> {
  const counts = { migrations: 0, bytes: 0 };
  const heap = new RankHeap(createHeapMemory());
  const n = (3 * MANAGED_PAGE_BYTES) / 4; // three pages of f32
  const buf = ManagedBuffer.alloc(heap, comm.gpu!, "f32", n, counts);
  assertEquals(buf.state, "both");
  await buf.write(new Float32Array(n).fill(7)); // lands on the host
  assertEquals([buf.state, counts.migrations], ["host", 0]);
  await buf.prefetch("device");
  assertEquals([buf.state, counts.migrations, counts.bytes], ["both", 1, 3 * MANAGED_PAGE_BYTES]);
  await buf.touch("device"); // device newer: the host copy is stale
  assertEquals(buf.state, "device");
  const page = buf.subarray(n / 3, (2 * n) / 3); // the middle page only
  const got = new Float32Array(n / 3);
  await page.read(got);
  assertEquals([got[0], got.at(-1), counts.migrations], [7, 7, 2]);
  assertEquals([page.state, buf.state], ["both", "device"]);
  await buf.touch("host");
  assertEquals(buf.state, "host"); // the rest migrated back first, then the device went stale
  assertEquals(counts.bytes, 3 * MANAGED_PAGE_BYTES + MANAGED_PAGE_BYTES + 2 * MANAGED_PAGE_BYTES);
}
