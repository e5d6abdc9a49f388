// WASM SIMD kernels against the JS reference: every op × dtype, odd lengths, unaligned offsets,
// each operand in a memory of its own, shared (a heap) or private (a large `host` buffer's), and
// in place; the committed binaries match the kernel source.
import { copy } from "../kernels/copy.ts";
import {
  copyWasm,
  divide,
  fromHalf,
  halfKernels,
  reduce,
  reduceWasm,
  toHalf,
  useSoftwareHalf,
} from "../kernels/reduce.ts";
import {
  divideReference,
  fromHalfReference,
  reduceReference,
  toHalfReference,
} from "../kernels/reduce_reference.ts";
import {
  F16_HARDWARE_WASM_BASE64,
  REDUCE_WASM_BASE64,
} from "../kernels/reduce_wasm_bytes.generated.ts";
import {
  LIMITS_PLAIN_WASM_BASE64,
  LIMITS_RELAXED_WASM_BASE64,
} from "../kernels/limits_wasm_bytes.generated.ts";
import { compileLimitsWasm } from "../scripts/build/limits_wasm.ts";
import { bestSimdBuild, limitsKernels } from "../kernels/limits_kernels.ts";
import {
  compileHalfHardwareWasm,
  compileReduceWasm,
  REDUCE_BUILDS,
} from "../scripts/build/reduce_wasm.ts";
import { toBase64Lines } from "../scripts/build/wat_compiler.ts";
import { reduceBuildName, type Sharing } from "../kernels/reduce_wat.ts";
import { createHeapMemory, heapBuffer, memoryOf, privateView } from "../primitives/memory/heap.ts";
import {
  type Dtype,
  DTYPE_INFO,
  DTYPES,
  KERNEL_OPS,
  makeView,
  type TypedArray,
} from "../primitives/types.ts";
import { fromBf16, setValues, toBf16, valuesOf } from "../kernels/elements.ts";
import { assert_, assertEquals } from "./_assert.ts";

/** A 4-MiB buffer to make views in: a shared heap's, or a private memory's. */
function bufferOf(sharing: Sharing): ArrayBufferLike {
  return sharing === "shared"
    ? heapBuffer(createHeapMemory(64))
    : privateView("f64", 1 << 19)!.buffer;
}

/** Values past every type's edges: infinities, NaN, the f16 and bf16 limits, subnormals. */
const SPECIAL = [Infinity, -Infinity, NaN, 65504, -65520, 6e-5, 1e-7, -3e-8, 3.4e38, 1e-40];

function values(i: number, salt: number, dtype: Dtype): number {
  const v = ((i * 7919 + salt * 104729) % 2001) - 1000;
  if (dtype === "i32") return v * 1_000_003;
  if ((i + salt) % 7 === 3) return SPECIAL[(i * 3 + salt) % SPECIAL.length];
  return v / 8 + (i % 3 === 0 ? -0 : 0.25);
}

/** Float values past every type's edges (see {@linkcode values}). */
const values_ = (i: number, salt: number) => values(i, salt, "f32");

/** Values to compare: raw words would differ in NaN payloads, which no dtype promises. */
const read = (view: TypedArray) => valuesOf(view);

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
            setValues(a, Array.from({ length: n }, (_, i) => values(i, 1, dtype)));
            setValues(b, Array.from({ length: n }, (_, i) => values(i, 2, dtype)));
            assert_(
              reduceWasm(op, dst, a, b),
              "the kernel runs on buffers in WebAssembly memories",
            );
            reduceReference(op, ref, a, b);
            assertEquals(
              read(dst),
              read(ref),
              `${name} ${op} ${dtype} n=${n} +${misalign}`,
            );
            // In place, and nothing written past the end.
            const guard = makeView(dtype, inDst, 4096 + 2 * 16384 + misalign + n * width, 1);
            guard[0] = 100; // exact in every dtype
            assert_(reduceWasm(op, dst, dst, b));
            reduceReference(op, ref, ref, b);
            assertEquals(
              read(dst),
              read(ref),
              `${name} ${op} ${dtype} n=${n} in place`,
            );
            assertEquals(guard[0], 100, `${name} ${op} ${dtype} n=${n} wrote past the end`);
            // The operands the other way round.
            assert_(reduceWasm(op, dst, b, a), "the kernel runs with the operands swapped");
            reduceReference(op, ref, b, a);
            assertEquals(read(dst), read(ref), `${name} ${op} ${dtype} n=${n} swapped`);
          }
        }
      }
      for (const n of [1, 7, 33]) {
        const dst = makeView(dtype, inDst, 4096 + width, n); // not 16-byte aligned
        const ref = new DTYPE_INFO[dtype].array(n);
        const v = Array.from({ length: n }, (_, i) => values(i, 3, dtype));
        setValues(dst, v);
        setValues(ref, v);
        divide(dst, 3);
        divideReference(ref, 3);
        assertEquals(read(dst), read(ref), `div ${dtype} n=${n}`);
      }
    }
  }
});

/**
 * The f16 kernels this engine runs: on its own conversions (the test task passes V8's
 * `--experimental-wasm-fp16`, as every task does), and the software ones they fall back to.
 */
const HALF_PATHS = halfKernels() === "hardware" ? ["hardware", "software"] as const : ["software"];

/** Runs `body` on each of {@linkcode HALF_PATHS}, then restores the engine's choice. */
function onEachHalfPath(body: (path: string) => void): void {
  try {
    for (const path of HALF_PATHS) {
      useSoftwareHalf(path === "software");
      assertEquals(halfKernels(), path);
      body(path);
    }
  } finally {
    useSoftwareHalf(false);
  }
}

Deno.test("the test task runs f16 on the engine's conversions (V8's --experimental-wasm-fp16)", () => {
  assertEquals(halfKernels(), "hardware");
});

Deno.test("half-precision kernels equal the JS reference on every word, finite ones alone too, on both f16 paths", () => {
  const buffer = heapBuffer(createHeapMemory(64));
  onEachHalfPath((path) => {
    for (const dtype of ["f16", "bf16"] as const) {
      const isFinite = (w: number) =>
        dtype === "f16" ? (w & 0x7c00) !== 0x7c00 : (w & 0x7f80) !== 0x7f80;
      const all = Array.from({ length: 1 << 16 }, (_, w) => w);
      // With every word, vectors meet infinities and NaNs; with finite words alone, f16's vectors
      // take the path for finite words, through subnormals, ties and overflow.
      for (const words of [all, all.filter(isFinite)]) {
        const n = words.length;
        const view = (k: number) => makeView(dtype, buffer, 4096 + k * 2 * n, n);
        const asWords = (v: TypedArray) => new Uint16Array(v.buffer, v.byteOffset, n);
        const a = view(0), b = view(1), dst = view(2);
        const ref = new DTYPE_INFO[dtype].array(n);
        asWords(a).set(words);
        for (const shift of [1, 1000, 12345]) {
          asWords(b).set([...words.slice(shift), ...words.slice(0, shift)]);
          for (const op of KERNEL_OPS) {
            reduce(op, dst, a, b);
            reduceReference(op, ref, a, b);
            assertEquals(read(dst), read(ref), `${path} ${dtype} ${op} shift ${shift}, ${n} words`);
          }
        }
        asWords(dst).set(words);
        ref.set(dst);
        divide(dst, 3);
        divideReference(ref, 3);
        assertEquals(read(dst), read(ref), `${path} ${dtype} div, ${n} words`);
      }
    }
  });
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

Deno.test("copies between heaps run memory.copy, exactly, at every offset, and never past a view", () => {
  for (const [d, s] of [["shared", "shared"], ["shared", "private"], ["private", "shared"]]) {
    const dstBuf = bufferOf(d as Sharing), srcBuf = bufferOf(s as Sharing);
    for (const [dstAt, srcAt, n] of [[0, 0, 128], [3, 5, 1001], [1, 0, 4096]]) {
      // Views that start inside the buffers and end before them: a copy past a view would show.
      const dst = new Float32Array(dstBuf, 4, dstAt + n + 8).fill(-1);
      const src = new Float32Array(srcBuf, 8, srcAt + n).map((_, i) => i * 0.5 + 1);
      copy(dst, src, dstAt, srcAt, n);
      const want = Array.from(
        { length: dst.length },
        (_, i) => i >= dstAt && i < dstAt + n ? (srcAt + i - dstAt) * 0.5 + 1 : -1,
      );
      assertEquals(Array.from(dst), want, `${d} <- ${s}, at ${dstAt} from ${srcAt}, ${n}`);
    }
  }
  // The kernel runs only between memories, and a range past a view goes to set(), which clamps.
  const heap = new Uint8Array(bufferOf("shared"), 0, 1024), plain = new Uint8Array(1024);
  assert_(copyWasm(heap, 0, new Uint8Array(bufferOf("shared")), 0, 512));
  assert_(!copyWasm(plain, 0, heap, 0, 512) && !copyWasm(heap, 0, plain, 0, 512));
  const source = bufferOf("shared");
  new Uint8Array(source, 0, 2048).fill(5); // what lies past the view
  const short = new Uint8Array(source, 0, 600).fill(7);
  const dst = new Uint8Array(bufferOf("shared"), 0, 2048).fill(9);
  copy(dst, short, 0, 100, 1024); // 1024 asked from 100 of 600: set() copies the 500 there are
  assertEquals([dst[0], dst[499], dst[500], dst[1023]], [7, 7, 9, 9]);
  // In one heap, overlapping ranges copy as memmove does.
  const one = new Int32Array(bufferOf("shared"), 0, 3000).map((_, i) => i);
  copy(one, one, 1, 0, 2000);
  assertEquals([one[0], one[1], one[2000], one[2001]], [0, 0, 1999, 2001]);
});

Deno.test("the committed kernel binaries match kernels/reduce_wat.ts and limits_wat.ts (run deno task build:wasm)", async () => {
  for (const build of REDUCE_BUILDS) {
    const key = reduceBuildName(build);
    assertEquals(
      REDUCE_WASM_BASE64[key],
      toBase64Lines(await compileReduceWasm(build)).join(""),
      key,
    );
  }
  for (const build of REDUCE_BUILDS) {
    const key = reduceBuildName(build);
    assertEquals(
      F16_HARDWARE_WASM_BASE64[key],
      toBase64Lines(await compileHalfHardwareWasm(build)).join(""),
      `f16 hardware ${key}`,
    );
  }
  for (
    const [build, committed] of [
      ["relaxed", LIMITS_RELAXED_WASM_BASE64],
      ["plain", LIMITS_PLAIN_WASM_BASE64],
    ] as const
  ) {
    assertEquals(committed, toBase64Lines(await compileLimitsWasm(build)).join(""), build);
  }
});

Deno.test("the limits' kernels copy and add exactly, and the peak's loop runs", () => {
  const memory = new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
  const floats = new Float32Array(memory.buffer);
  for (let i = 0; i < 1024; i++) [floats[i], floats[1024 + i]] = [i, 3 * i];
  for (const build of [bestSimdBuild(), "plain"] as const) {
    const k = limitsKernels(memory, { build });
    k.add(8192, 0, 4096, 1024);
    assertEquals(floats.subarray(2048, 3072), Float32Array.from({ length: 1024 }, (_, i) => 4 * i));
    k.copy(12288, 4096, 4096);
    assertEquals(floats.subarray(3072, 4096), floats.subarray(1024, 2048));
    assert_(Number.isFinite(k.peak(10)));
  }
});

Deno.test("bf16 words round to nearest even, overflow to infinity and keep NaN", () => {
  assertEquals(toBf16(1), 0x3f80);
  assertEquals(toBf16(1 + 2 ** -8), 0x3f80, "a tie goes to the even word below");
  assertEquals(toBf16(1 + 3 * 2 ** -8), 0x3f82, "a tie goes to the even word above");
  assertEquals(toBf16(-2.5), 0xc020);
  assertEquals(toBf16(3.4e38), 0x7f80, "past the largest bf16 is infinity");
  assert_(Number.isNaN(fromBf16(toBf16(NaN))));
  assertEquals(fromBf16(0x3f82), 1 + 2 ** -6);
});

Deno.test("wasm conversions to and from half precision equal the JS reference, with and without error feedback, on both f16 paths", () => {
  const buffer = heapBuffer(createHeapMemory(64));
  onEachHalfPath((path) => {
    for (const dtype of ["f16", "bf16"] as const) {
      for (const n of [1, 7, 8, 9, 63, 64, 65, 1001]) {
        for (const feedback of [false, true]) {
          const src = makeView("f32", buffer, 4096 + 4, n) as Float32Array;
          const residual = makeView("f32", buffer, 4096 + 16384 + 8, n) as Float32Array;
          const half = makeView(dtype, buffer, 4096 + 2 * 16384 + 2, n) as
            | Float16Array
            | Uint16Array;
          const guard = makeView(dtype, buffer, 4096 + 2 * 16384 + 2 + 2 * n, 1);
          guard[0] = 100;
          const values = Array.from({ length: n }, (_, i) => values_(i, 1));
          const start = Array.from({ length: n }, (_, i) => values_(i, 2) * 1e-3);
          src.set(values);
          residual.set(start);
          const refResidual = Float32Array.from(start);
          const ref = new DTYPE_INFO[dtype].array(n) as Float16Array | Uint16Array;
          toHalf(half, src, feedback ? residual : undefined);
          toHalfReference(ref, Float32Array.from(values), feedback ? refResidual : undefined);
          const what = `${path} ${dtype} n=${n}${feedback ? " with feedback" : ""}`;
          assertEquals(read(half), read(ref), what);
          if (feedback) assertEquals(Array.from(residual), Array.from(refResidual), what);
          assertEquals(guard[0], 100, `${what} wrote past the end`);
          const back = makeView("f32", buffer, 4096 + 3 * 16384 + 4, n) as Float32Array;
          const refBack = new Float32Array(n);
          fromHalf(back, half);
          fromHalfReference(refBack, ref);
          assertEquals(Array.from(back), Array.from(refBack), `${what} back`);
        }
      }
    }
  });
});
