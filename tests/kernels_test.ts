// WASM SIMD kernels against the JS reference: every op × dtype, odd lengths, unaligned offsets,
// each operand in a memory of its own, shared (a heap) or private (a large `host` buffer's), and
// in place; the committed binaries match the kernel source.
import { divide, reduce, reduceWasm } from "../kernels/reduce.ts";
import { divideReference, reduceReference } from "../kernels/reduce_reference.ts";
import { REDUCE_WASM_BASE64 } from "../kernels/reduce_wasm_bytes.generated.ts";
import { compileReduceWasm, REDUCE_BUILDS } from "../kernels/build_wasm.ts";
import { toBase64Lines } from "../kernels/wasm_build.ts";
import { reduceBuildName, type Sharing } from "../kernels/reduce_wat.ts";
import { createHeapMemory, heapBuffer, memoryOf, privateView } from "../primitives/memory/heap.ts";
import { DTYPE_INFO, DTYPES, KERNEL_OPS, makeView } from "../primitives/types.ts";
import { assert_, assertEquals } from "./_assert.ts";

/** A 4-MiB buffer to make views in: a shared heap's, or a private memory's. */
function bufferOf(sharing: Sharing): ArrayBufferLike {
  return sharing === "shared"
    ? heapBuffer(createHeapMemory(64))
    : privateView("f64", 1 << 19)!.buffer;
}

function values(i: number, salt: number, int: boolean): number {
  const v = ((i * 7919 + salt * 104729) % 2001) - 1000;
  return int ? v * 1_000_003 : v / 8 + (i % 3 === 0 ? -0 : 0.25);
}

Deno.test("wasm kernels equal the JS reference for every op, dtype, length, alignment and heaps", () => {
  for (const build of REDUCE_BUILDS) {
    const name = build.join("/");
    const [inDst, inA, inB] = build.map(bufferOf);
    for (const dtype of DTYPES) {
      const width = DTYPE_INFO[dtype].bytes;
      for (const op of KERNEL_OPS) {
        for (const n of [1, 3, 4, 5, 15, 16, 17, 63, 64, 65, 1001]) {
          for (const misalign of [0, width]) {
            const at = (k: number, buffer: ArrayBufferLike) =>
              makeView(dtype, buffer, 4096 + k * 16384 + misalign, n);
            const a = at(0, inA), b = at(1, inB), dst = at(2, inDst);
            const ref = new DTYPE_INFO[dtype].array(n);
            for (let i = 0; i < n; i++) {
              a[i] = values(i, 1, dtype === "i32");
              b[i] = values(i, 2, dtype === "i32");
            }
            assert_(
              reduceWasm(op, dst, a, b),
              "the kernel runs on buffers in WebAssembly memories",
            );
            reduceReference(op, ref, a, b);
            assertEquals(
              Array.from(dst),
              Array.from(ref),
              `${name} ${op} ${dtype} n=${n} +${misalign}`,
            );
            // In place, and nothing written past the end.
            const guard = makeView(dtype, inDst, 4096 + 2 * 16384 + misalign + n * width, 1);
            guard[0] = 12345;
            assert_(reduceWasm(op, dst, dst, b));
            reduceReference(op, ref, ref, b);
            assertEquals(
              Array.from(dst),
              Array.from(ref),
              `${name} ${op} ${dtype} n=${n} in place`,
            );
            assertEquals(guard[0], 12345, `${name} ${op} ${dtype} n=${n} wrote past the end`);
            // The operands the other way round.
            assert_(reduceWasm(op, dst, b, a), "the kernel runs with the operands swapped");
            reduceReference(op, ref, b, a);
            assertEquals(Array.from(dst), Array.from(ref), `${name} ${op} ${dtype} n=${n} swapped`);
          }
        }
      }
      for (const n of [1, 7, 33]) {
        const dst = makeView(dtype, inDst, 4096 + width, n); // not 16-byte aligned
        const ref = new DTYPE_INFO[dtype].array(n);
        for (let i = 0; i < n; i++) dst[i] = ref[i] = values(i, 3, dtype === "i32");
        divide(dst, 3);
        divideReference(ref, 3);
        assertEquals(Array.from(dst), Array.from(ref), `div ${dtype} n=${n}`);
      }
    }
  }
});

Deno.test("buffers outside a heap fall back to the JS reference", () => {
  const dst = new Float32Array(5),
    a = Float32Array.of(1, 2, 3, 4, 5),
    b = Float32Array.of(5, 4, 3, 2, 1);
  assert_(memoryOf(dst.buffer) === undefined);
  assert_(!reduceWasm("max", dst, a, b));
  reduce("max", dst, a, b);
  assertEquals(Array.from(dst), [5, 4, 3, 4, 5]);
});

Deno.test("the committed kernel binaries match kernels/reduce_wat.ts (run deno task build:wasm)", async () => {
  for (const build of REDUCE_BUILDS) {
    const key = reduceBuildName(build);
    assertEquals(
      REDUCE_WASM_BASE64[key],
      toBase64Lines(await compileReduceWasm(build)).join(""),
      key,
    );
  }
});
