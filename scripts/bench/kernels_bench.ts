// Reduction kernels: WASM SIMD vs the plain-JS reference vs a copy, per size; and the
// half-precision kernels beside f32's at equal bytes (docs/dtypes.md).
import { reduce } from "../../kernels/mod.ts";
import { reduceReference } from "../../kernels/mod.ts";
import { setValues } from "../../kernels/mod.ts";
import { createHeapMemory, RankHeap } from "../../internal.ts";

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

// 1 MiB of each dtype, integers as the exact checks use (no subnormal slows any of them down).
for (const dtype of ["f32", "bf16", "f16"] as const) {
  const n = (1 << 20) / (dtype === "f32" ? 4 : 2);
  const [dst, a, b] = [0, 1, 2].map(() => heap.alloc(dtype, n));
  setValues(a, Array.from({ length: n }, (_, i) => i % 256));
  setValues(b, Array.from({ length: n }, (_, i) => (i * 7) % 256));
  Deno.bench(
    `${dtype} sum`,
    { group: "1 MiB, equal bytes", baseline: dtype === "f32" },
    () => reduce("sum", dst, a, b),
  );
}
