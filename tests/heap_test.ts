// The rank heap's allocator: buffers come back zero-filled whether their bytes are fresh or reused;
// a rank and its progress thread allocate in regions of one heap that never meet; a large host
// buffer gets a private memory of its own, which the SIMD kernels take.
import { assert_, assertEquals, assertThrows } from "./_assert.ts";
import { reduceWasm } from "../kernels/reduce.ts";
import type { HostBuffer } from "../primitives/memory/comm_buffer.ts";
import {
  createHeapMemory,
  HEAP_MAX_BYTES,
  memoryOf,
  PROGRESS_SCRATCH_FROM,
  RankHeap,
} from "../primitives/memory/heap.ts";
import { RankMemory } from "../primitives/memory/rank_memory.ts";

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

Deno.test("heap: a rank and its progress thread allocate in regions of one memory that never meet", () => {
  const memory = createHeapMemory();
  const rank = new RankHeap(memory, { to: PROGRESS_SCRATCH_FROM });
  const scratch = new RankHeap(memory, { from: PROGRESS_SCRATCH_FROM });
  const mine = rank.alloc("f32", 1024), theirs = scratch.alloc("f32", 1024);
  assert_(mine.byteOffset + mine.byteLength <= PROGRESS_SCRATCH_FROM, `${mine.byteOffset}`);
  assertEquals(theirs.byteOffset, PROGRESS_SCRATCH_FROM);
  assertEquals(memoryOf(mine.buffer), memoryOf(theirs.buffer));
  // The rank's region ends where the scratch begins.
  assertThrows(
    () => rank.alloc("i32", PROGRESS_SCRATCH_FROM / 4),
    RangeError,
    new RegExp(`at most ${PROGRESS_SCRATCH_FROM}`),
  );
});

Deno.test("heap: a large host buffer has a private memory of its own, which the kernels reduce", () => {
  const memory = new RankMemory(new RankHeap(createHeapMemory()));
  const small = memory.alloc("host", "f32", 1000) as HostBuffer;
  assertEquals(memoryOf(small.view.buffer), undefined); // a plain array
  const a = memory.alloc("host", "f32", 1 << 16) as HostBuffer;
  const b = memory.alloc("host", "f32", 1 << 16) as HostBuffer;
  const own = memoryOf(a.view.buffer);
  assert_(own !== undefined, "a large host buffer lives in a WebAssembly memory");
  // Pageable and private: a fixed-length ArrayBuffer that nobody else holds.
  assert_(a.view.buffer instanceof ArrayBuffer && !a.view.buffer.resizable);
  assert_(own !== memoryOf(b.view.buffer) && own !== memory.heap.memory);
  assertEquals(a.view.findIndex((v) => v !== 0), -1);
  // The SIMD kernel takes two of them and scratch from the shared heap.
  a.view.fill(3);
  const scratch = memory.heap.alloc("f32", 1 << 16);
  scratch.fill(4);
  assert_(reduceWasm("sum", b.view, a.view, scratch), "the kernel reduces host buffers");
  assertEquals([b.view[0], b.view[(1 << 16) - 1]], [7, 7]);
});
