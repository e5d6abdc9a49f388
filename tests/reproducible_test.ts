// Reproducible sums, on one rank: the library's local sum, and both forms the collectives carry
// (window sums after a pass of codes, and records), give the BigInt reference's bits for random
// terms, cancellation, a wide spread of exponents, subnormals, zeros, infinities and NaNs, at
// counts 1, 7, 1009 and 2^17 + 1, however the terms are ordered or grouped.
import { assert_, assertEquals, assertThrows } from "./_assert.ts";
import { referenceSum } from "./_reproducible_reference.ts";
import {
  codesOf,
  fromRecords,
  fromWindow,
  MAX_TERMS,
  planOf,
  recordsOf,
  type ReproducibleDtype,
  reproducibleSum,
  windowOf,
} from "../kernels/reproducible.ts";
import { DTYPE_INFO, makeView, type TypedArray } from "../primitives/types.ts";
import { fromStored, setValues, valuesOf } from "../kernels/elements.ts";
import { mulberry32, TERM_KINDS, termsOf } from "./_reproducible_terms.ts";
import { createHeapMemory, RankHeap } from "../primitives/memory/heap.ts";
import { REPRODUCIBLE_WASM_BASE64 } from "../kernels/reproducible_wasm_bytes.generated.ts";
import { compileReproducibleWasm } from "../scripts/build/reproducible_wasm.ts";
import { toBase64Lines } from "../scripts/build/wat_compiler.ts";

const DTYPES: ReproducibleDtype[] = ["f32", "f64", "f16", "bf16"];

/** A view of `dtype` holding `values` (each already a value of the dtype). */
function viewOf(dtype: ReproducibleDtype, values: number[]): TypedArray {
  const v = makeView(
    dtype,
    new ArrayBuffer(values.length * DTYPE_INFO[dtype].bytes),
    0,
    values.length,
  );
  setValues(v, values);
  return v;
}

/** Element i of a result and the reference differ: what, as text (nothing when they agree). */
function differences(dtype: ReproducibleDtype, got: TypedArray, want: number[]): string[] {
  const values = valuesOf(got), out: string[] = [];
  for (let i = 0; i < want.length && out.length < 5; i++) {
    if (!Object.is(values[i], want[i]) && !(Number.isNaN(values[i]) && Number.isNaN(want[i]))) {
      out.push(`${dtype}[${i}]: got ${values[i]}, want ${want[i]}`);
    }
  }
  return out;
}

/** The reference of every element of stacked terms (k terms of `count`). */
function reference(dtype: ReproducibleDtype, terms: number[][], count: number, divisor = 1) {
  return Array.from(
    { length: count },
    (_, i) => referenceSum(terms.map((t) => t[i]), dtype, divisor),
  );
}

for (const dtype of DTYPES) {
  Deno.test(`reproducible sum: the reference's bits, ${dtype}, every kind of term and count`, () => {
    for (const kind of TERM_KINDS) {
      for (const count of [1, 7, 1009, 2 ** 17 + 1]) {
        if (count > 1009 && kind !== "random") continue;
        const terms = termsOf(kind, dtype, 5, count, 7);
        const want = reference(dtype, terms, count);
        const out = makeView(dtype, new ArrayBuffer(count * 8), 0, count);
        reproducibleSum(viewOf(dtype, terms.flat()), out);
        assertEquals(differences(dtype, out, want), [], `${kind}, ${count} elements`);
        // Another order of the same terms: the same bits.
        const again = makeView(dtype, new ArrayBuffer(count * 8), 0, count);
        reproducibleSum(viewOf(dtype, terms.toReversed().flat()), again);
        assertEquals(valuesOf(again).map(String), valuesOf(out).map(String), `${kind} reversed`);
      }
    }
  });

  Deno.test(`reproducible sum: groups summed as the collectives sum them give the reference's bits, ${dtype}`, () => {
    const random = mulberry32(11);
    for (const kind of TERM_KINDS) {
      for (const count of [1, 7, 16, 1009]) {
        const terms = termsOf(kind, dtype, 9, count, 3);
        // The terms spread over "ranks": a few groups of any size, in an order of their own.
        const groups: number[][][] = [[], [], [], []];
        for (const t of terms) groups[Math.floor(random() * groups.length)].push(t);
        const used = groups.filter((g) => g.length > 0).sort(() => random() - 0.5);
        const plan = planOf(dtype, count);
        const out = makeView(dtype, new ArrayBuffer(count * 8), 0, count);
        if (plan.recorded) {
          const total = new Float64Array(count * plan.width);
          for (const g of used) {
            const rec = new Float64Array(count * plan.width);
            recordsOf(viewOf(dtype, g.flat()), count, rec);
            for (let i = 0; i < rec.length; i++) total[i] += rec[i];
          }
          fromRecords(total, out);
        } else {
          const codes = plan.codeDtype === "f32" ? new Float32Array(count) : new Uint16Array(count);
          const bf16 = codes instanceof Uint16Array;
          let max = new Array(count).fill(0);
          if (plan.codes > 0) {
            for (const g of used) {
              const mine = bf16 ? new Uint16Array(count) : new Float32Array(count);
              codesOf(viewOf(dtype, g.flat()), count, mine);
              const values = bf16 ? Array.from(mine, (w) => fromStored("bf16", w)) : [...mine];
              max = max.map((m, i) => Math.max(m, values[i]));
            }
            setValues(codes, max);
          }
          const total = new Float64Array(count * plan.width);
          for (const g of used) {
            const acc = new Float64Array(count * plan.width);
            windowOf(viewOf(dtype, g.flat()), count, plan.codes > 0 ? codes : undefined, acc);
            for (let i = 0; i < acc.length; i++) total[i] += acc[i];
          }
          fromWindow(total, plan.codes > 0 ? codes : undefined, out);
        }
        assertEquals(
          differences(dtype, out, reference(dtype, terms, count)),
          [],
          `${kind}, ${count}`,
        );
      }
    }
  });
}

Deno.test("reproducible sum: a record and a window of the same terms agree at every small count", () => {
  for (const dtype of ["f32", "bf16"] as const) {
    for (let count = 1; count <= 16; count++) {
      const terms = termsOf("cancelling", dtype, 6, count, count);
      const rec = new Float64Array(count * planOf(dtype, count).width);
      recordsOf(viewOf(dtype, terms.flat()), count, rec);
      const out = makeView(dtype, new ArrayBuffer(count * 8), 0, count);
      fromRecords(rec, out);
      assertEquals(
        differences(dtype, out, reference(dtype, terms, count)),
        [],
        `${dtype} ${count}`,
      );
    }
  }
});

Deno.test("reproducible sum: avg divides the exact sum once before its one rounding", () => {
  for (const dtype of DTYPES) {
    const terms = termsOf("random", dtype, 3, 101, 5);
    const out = makeView(dtype, new ArrayBuffer(101 * 8), 0, 101);
    reproducibleSum(viewOf(dtype, terms.flat()), out, 3);
    assertEquals(differences(dtype, out, reference(dtype, terms, 101, 3)), [], dtype);
  }
});

Deno.test("reproducible sum: what each special term gives", () => {
  const sum = (values: number[]) => {
    const out = new Float32Array(1);
    reproducibleSum(Float32Array.from(values), out);
    return out[0];
  };
  assertEquals(sum([1e8, 1, -1e8]), 1); // the plain f32 sum in this order gives 0
  assert_(Number.isNaN(sum([Infinity, -Infinity, 1])), "∞ − ∞ is NaN");
  assert_(Number.isNaN(sum([NaN, 1])), "NaN stays NaN");
  assertEquals(sum([Infinity, 3e38, 3e38]), Infinity);
  assertEquals(sum([3e38, 3e38]), Infinity); // overflow rounds to ∞, as one f32 addition would
  assert_(Object.is(sum([-0, -0]), 0), "a zero result is +0");
  assertEquals(sum([2 ** -149, 2 ** -149]), 2 ** -148); // subnormals add exactly
  // Beside 1, terms are rounded to multiples of 2^-37, halfway cases to even: 0.5 → 0, 2.5 → 2.
  const ties = [1, 2 ** -38, 5 * 2 ** -38, -1];
  assertEquals(sum(ties), 2 ** -36);
  assertEquals(sum(ties.map((x) => -x)), -(2 ** -36));
  assertEquals(referenceSum(ties, "f32"), 2 ** -36);
});

Deno.test("reproducible sum: terms must be whole, at most MAX_TERMS, of the dtypes it takes", () => {
  assertThrows(
    () => reproducibleSum(new Float32Array(5), new Float32Array(2)),
    RangeError,
    /whole/,
  );
  assertThrows(
    () => reproducibleSum(new Float32Array(MAX_TERMS + 1), new Float32Array(1)),
    RangeError,
    new RegExp(`at most ${MAX_TERMS} terms`),
  );
  assertThrows(() => reproducibleSum(new Int32Array(2), new Int32Array(1)), TypeError, /f32, f64/);
  assertThrows(
    () => reproducibleSum(new Float64Array(2), new Float32Array(1)),
    TypeError,
    /f64 terms/,
  );
});

Deno.test("reproducible sum: f32 in a rank's heap runs the WebAssembly kernels, with the JS loops' bits", () => {
  const heap = new RankHeap(createHeapMemory());
  /** One term's passes as a collective makes them, its arrays from `alloc`. */
  const passes = (
    values: number[],
    alloc: (dtype: "f32" | "bf16" | "f64", n: number) => TypedArray,
  ) => {
    const n = values.length, terms = alloc("f32", n) as Float32Array;
    terms.set(values);
    const codes = alloc("bf16", n) as Uint16Array, acc = alloc("f64", n) as Float64Array;
    const out = alloc("f32", n);
    codesOf(terms, n, codes);
    windowOf(terms, n, codes, acc);
    fromWindow(acc, codes, out, 3);
    return {
      codes: Array.from(codes),
      acc: Array.from(acc, String),
      out: valuesOf(out).map(String),
    };
  };
  for (const kind of TERM_KINDS) {
    for (const count of [63, 64, 1009, 2 ** 17 + 1]) {
      const values = termsOf(kind, "f32", 1, count, 17)[0];
      const heapArrays: TypedArray[] = [];
      const wasm = passes(values, (dtype, n) => {
        const a = heap.alloc(dtype, n);
        heapArrays.push(a);
        return a;
      });
      const js = passes(values, (dtype, n) => makeView(dtype, new ArrayBuffer(n * 8), 0, n));
      assertEquals(wasm, js, `${kind} ${count}`);
      for (const a of heapArrays) heap.free(a);
    }
  }
});

Deno.test("the committed reproducible kernels match kernels/reproducible_wat.ts (run deno task build:wasm)", async () => {
  assertEquals(
    REPRODUCIBLE_WASM_BASE64,
    toBase64Lines(await compileReproducibleWasm()).join(""),
  );
});
