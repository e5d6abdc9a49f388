// The rank heap's allocator: buffers come back zero-filled whether their bytes are fresh or reused.
import { assertEquals, assertThrows } from "./_assert.ts";
import { createHeapMemory, HEAP_MAX_BYTES, RankHeap } from "../primitives/memory/heap.ts";

Deno.test("heap: fresh, reused and partly reused buffers are all zeros", () => {
  const heap = new RankHeap(createHeapMemory());
  const a = heap.alloc("f32", 1000), b = heap.alloc("f64", 500);
  assertEquals(a.some((v) => v !== 0) || b.some((v) => v !== 0), false);
  a.fill(7);
  b.fill(7);
  heap.free(a);
  heap.free(b);
  // Reuses a and b's bytes, then runs past them into memory never handed out.
  const c = heap.alloc("i32", 4000);
  assertEquals(c.byteOffset, a.byteOffset);
  assertEquals(c.findIndex((v) => v !== 0), -1);
  c.fill(-1);
  heap.free(c);
  const d = heap.alloc("f64", 100);
  assertEquals(d.findIndex((v) => v !== 0), -1);
});

Deno.test("heap: a buffer larger than a rank heap is a RangeError naming the limit", () => {
  const heap = new RankHeap(createHeapMemory());
  assertThrows(() => heap.alloc("f32", HEAP_MAX_BYTES / 4 + 1), RangeError, /at most 4294901760/);
});
