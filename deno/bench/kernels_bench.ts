// Reduction kernels: WASM SIMD vs the plain-JS reference vs a copy, per size.
import { reduce } from "../../kernels/reduce.ts";
import { reduceReference } from "../../kernels/reduce_reference.ts";
import { createHeapMemory, RankHeap } from "../../primitives/memory/heap.ts";

const heap = new RankHeap(createHeapMemory());
for (
  const [label, floats] of [["64 KiB", 2 ** 14], ["4 MiB", 2 ** 20], ["64 MiB", 2 ** 24]] as const
) {
  const a = heap.alloc("f32", floats), b = heap.alloc("f32", floats);
  const group = `f32 sum ${label}`;
  Deno.bench(`wasm simd`, { group, baseline: true }, () => reduce("sum", a, a, b));
  Deno.bench(`js reference`, { group }, () => reduceReference("sum", a, a, b));
  Deno.bench(`Float32Array.set copy`, { group }, () => a.set(b));
}
