// The trainer's WebAssembly kernels (both builds) against the JS reference: every GEMM form
// (transposes, bias, ReLU, accumulate) over shapes with every kind of edge, plus the elementwise
// kernels; and the committed binaries match trainer/kernels/mlp_wat.ts.
import { bestMlpBuild, WasmMlpKernels } from "../trainer/kernels/mlp.ts";
import { MLP_REFERENCE } from "../trainer/kernels/mlp_reference.ts";
import {
  MLP_PLAIN_WASM_BASE64,
  MLP_RELAXED_WASM_BASE64,
} from "../trainer/kernels/mlp_wasm_bytes.generated.ts";
import { compileMlpWasm } from "../scripts/build/mlp_wasm.ts";
import { toBase64Lines } from "../scripts/build/wat_compiler.ts";
import { createHeapMemory, RankHeap } from "../primitives/memory/heap.ts";
import type { MlpBuild } from "../trainer/kernels/mlp_wat.ts";
import { assert_, assertEquals, assertThrows } from "./_assert.ts";

const heap = new RankHeap(createHeapMemory());
const BUILDS: MlpBuild[] = ["relaxed", "plain"];

/** Deterministic values in [-1, 1). */
function fill(x: Float32Array, salt: number): Float32Array {
  for (let i = 0; i < x.length; i++) x[i] = (((i * 7919 + salt * 104729) % 2003) - 1001) / 1001;
  return x;
}

function heapArray(n: number, salt: number): Float32Array {
  return fill(heap.alloc("f32", n) as Float32Array, salt);
}

/** Largest |a − b| relative to the scale of the sums (k terms of magnitude ≤ 1). */
function maxError(a: Float32Array, b: Float32Array): number {
  let e = 0;
  for (let i = 0; i < a.length; i++) e = Math.max(e, Math.abs(a[i] - b[i]));
  return e;
}

Deno.test("this Deno validates relaxed SIMD, so the FMA build is the one that runs", () => {
  assertEquals(bestMlpBuild(), "relaxed");
});

for (const build of BUILDS) {
  Deno.test(`${build} gemm equals the JS reference for every form and edge`, () => {
    const kernels = new WasmMlpKernels(heap, { build });
    const shapes = [
      [1, 1, 1],
      [3, 5, 2],
      [4, 8, 4],
      [5, 9, 7],
      [13, 37, 11],
      [32, 256, 300],
      [
        7,
        10,
        0,
      ],
      [64, 10, 256],
      [784 / 4, 20, 33],
    ];
    for (const [m, n, k] of shapes) {
      for (let form = 0; form < 16; form++) {
        const transA = (form & 1) !== 0, transB = (form & 2) !== 0;
        const withBias = (form & 4) !== 0, accumulate = (form & 8) !== 0;
        const relu = (m + n + form) % 3 === 0;
        const a = heapArray(m * k, 1), b = heapArray(k * n, 2), bias = heapArray(n, 3);
        const c = heapArray(m * n + 1, 4).subarray(0, m * n);
        const guard = c.length;
        const cAll = new Float32Array(c.buffer, c.byteOffset, m * n + 1);
        const ref = Float32Array.from(c);
        const options = { transA, transB, bias: withBias ? bias : undefined, relu, accumulate };
        kernels.gemm(c, a, b, m, n, k, options);
        MLP_REFERENCE.gemm(ref, a, b, m, n, k, options);
        const what = `${m}×${n}×${k} ${JSON.stringify({ ...options, bias: withBias })}`;
        assert_(maxError(c, ref) <= 1e-6 * (k + 2), `${what}: off by ${maxError(c, ref)}`);
        assertEquals(
          cAll[guard],
          fill(new Float32Array(m * n + 1), 4)[guard],
          `${what}: wrote past C`,
        );
        for (const x of [a, b, bias, cAll]) heap.free(x);
      }
    }
  });

  Deno.test(`${build} elementwise kernels equal the JS reference`, () => {
    const kernels = new WasmMlpKernels(heap, { build });
    for (const n of [1, 3, 4, 5, 17, 1001]) {
      const d = heapArray(n, 5), a = heapArray(n, 6), ref = Float32Array.from(d);
      a[0] = 0; // ReLU's derivative at 0 is 0, as in PyTorch
      kernels.reluBackward(d, a);
      MLP_REFERENCE.reluBackward(ref, a);
      assertEquals(Array.from(d), Array.from(ref), `relu backward n=${n}`);

      for (const rows of [1, 3, 64]) {
        const src = heapArray(rows * n, 7), dst = heapArray(n, 8), expect = Float32Array.from(dst);
        for (const accumulate of [false, true]) {
          kernels.colsum(dst, src, rows, accumulate);
          MLP_REFERENCE.colsum(expect, src, rows, accumulate);
          assert_(maxError(dst, expect) < 1e-5, `colsum ${rows}×${n}`);
        }
        heap.free(src);
        heap.free(dst);
      }

      for (const momentum of [0, 0.9]) {
        const p = heapArray(n, 9), g = heapArray(n, 10), v = heapArray(n, 11);
        const [rp, rv] = [Float32Array.from(p), Float32Array.from(v)];
        for (let step = 0; step < 3; step++) {
          kernels.sgd(p, g, v, 0.1, momentum, 0.5);
          MLP_REFERENCE.sgd(rp, g, rv, 0.1, momentum, 0.5);
        }
        assert_(maxError(p, rp) < 1e-6 && maxError(v, rv) < 1e-6, `sgd μ=${momentum} n=${n}`);
        for (const x of [p, g, v]) heap.free(x);
      }
      for (const x of [d, a]) heap.free(x);
    }
  });

  Deno.test(`${build} reproducible gradient terms equal the JS reference bit for bit`, () => {
    const kernels = new WasmMlpKernels(heap, { build });
    for (const [rows, I, O] of [[1, 1, 1], [3, 5, 7], [17, 33, 10], [32, 64, 256]]) {
      const a = heapArray(rows * I, 12), d = heapArray(rows * O, 13);
      for (let k = 0; k < a.length; k += 3) a[k] = 0; // skipped rows of a column
      const f64 = (n: number, value: (i: number) => number) => {
        const x = heap.alloc("f64", n) as Float64Array;
        for (let i = 0; i < n; i++) x[i] = value(i);
        return x;
      };
      const inverse = f64(I, (i) => 2 ** -(i % 5)), rounders = f64(O, (o) => 1.5 * 2 ** (o % 7));
      const sums = f64(I * O, (k) => k % 3), expect = Float64Array.from(sums);
      kernels.roundedProducts(sums, a, d, inverse, rounders, rows);
      MLP_REFERENCE.roundedProducts(expect, a, d, inverse, rounders, rows);
      assertEquals(Array.from(sums), Array.from(expect), `${rows}×${I}×${O}`);
      for (const x of [a, d, inverse, rounders, sums]) heap.free(x);
    }
  });
}

Deno.test("wasm gather scales image bytes exactly like the JS reference", () => {
  const pixels = 37; // a 16-byte vector loop and a tail
  const data = new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
  const images = new Uint8Array(data.buffer, 3, 10 * pixels);
  images.forEach((_, i) => images[i] = (i * 97) % 256);
  const from = { images, pixels, memory: data };
  const at = heap.alloc("i32", 4);
  const order = new Uint32Array(at.buffer, at.byteOffset, 4);
  order.set([9, 0, 4, 4]);
  const got = heapArray(4 * pixels, 1), want = new Float32Array(4 * pixels);
  new WasmMlpKernels(heap, { data }).gather(got, from, order);
  MLP_REFERENCE.gather(want, from, order);
  assertEquals(Array.from(got), Array.from(want));
  assertEquals(got[1], Math.fround(images[9 * pixels + 1] / 255));
  assertThrows(
    () => new WasmMlpKernels(heap).gather(got, from, order),
    TypeError,
    /not made with/,
  );
});

Deno.test("wasm kernels refuse arrays outside their heap", () => {
  const kernels = new WasmMlpKernels(heap);
  assertThrows(
    () => kernels.reluBackward(new Float32Array(4), new Float32Array(4)),
    TypeError,
    /outside this rank's heap/,
  );
});

Deno.test("the committed trainer kernels match trainer/kernels/mlp_wat.ts (run deno task build:wasm)", async () => {
  assertEquals(MLP_RELAXED_WASM_BASE64, toBase64Lines(await compileMlpWasm("relaxed")).join(""));
  assertEquals(MLP_PLAIN_WASM_BASE64, toBase64Lines(await compileMlpWasm("plain")).join(""));
});
