// The metric formulas against hand-computed values, and the fast exact checks against the
// definition they shortcut.
import { assert_, assertEquals } from "./_assert.ts";
import { metrics, percentile } from "../bench/metrics.ts";
import { PRIMITIVES } from "../bench/cases.ts";
import { expectedReduction, fillInput, inputValue, wrongReduced } from "../bench/exact_inputs.ts";
import { sizeName } from "../bench/report_format.ts";
import { REDUCE_OPS } from "../primitives/types.ts";

Deno.test("metrics: study's time formula, Gb/s, algbw, busbw", () => {
  // 2 ranks, 10 iterations, rank totals 100 µs and 300 µs: time = 400 / (2·10) = 20 µs.
  const m = metrics({ rankTotalsUs: [100, 300], iters: 10, bytes: 4_000_000, busFactor: 1.5 });
  assertEquals(m.time_us, 20);
  assertEquals(m.min_us, 10);
  assertEquals(m.max_us, 30);
  assertEquals(m.algbw_gbs, 200); // 4e6 B / 20e-6 s = 2e11 B/s
  assertEquals(m.gbps, 1600);
  assertEquals(m.busbw_gbs, 300);
});

Deno.test("metrics: nccl-tests bus factors", () => {
  assertEquals(PRIMITIVES.allreduce.busFactor(4), 1.5);
  assertEquals(PRIMITIVES.allgather.busFactor(4), 0.75);
  assertEquals(PRIMITIVES.reduceScatter.busFactor(8), 0.875);
  for (const p of ["bcast", "reduce", "sendrecv"] as const) {
    assertEquals(PRIMITIVES[p].busFactor(8), 1);
  }
});

Deno.test("metrics: percentiles by nearest rank", () => {
  const samples = Array.from({ length: 100 }, (_, i) => 100 - i); // 1 … 100, shuffled order
  assertEquals(percentile(samples, 0.5), 50);
  assertEquals(percentile(samples, 0.99), 99);
  assertEquals(percentile([7], 0.99), 7);
  assert_(Number.isNaN(percentile([], 0.5)));
});

Deno.test("checks: periodic expected values equal the per-rank definition, wraps included", () => {
  for (const op of REDUCE_OPS) {
    for (const dtype of ["f32", "f64", "i32"] as const) {
      for (const size of [1, 3, 4, 7, 8]) {
        // Around the 2^20 period where rank inputs wrap, and at the start.
        const offset = Math.floor(1048576 / size) - 5;
        const exact = Float64Array.from(
          { length: 40 },
          (_, k) => expectedReduction(op, dtype, size, (r) => inputValue(op, r, size, offset + k)),
        );
        const view = dtype === "f32" ? Float32Array.from(exact) : Float64Array.from(exact);
        assertEquals(wrongReduced(view, op, dtype, size, offset), 0, `${op} ${dtype} ${size}`);
        view[3] += 1;
        view[39] = NaN;
        assertEquals(wrongReduced(view, op, dtype, size, offset), 2, `${op} ${dtype} ${size}`);
      }
    }
  }
});

Deno.test("checks: fills and checks that work on one period hold over several", () => {
  for (const op of ["sum", "prod"] as const) {
    for (const size of [3, 4]) {
      // 2.5 periods of the inputs (2^20 elements for 3 ranks, 2^18 for 4, 3 for prod).
      const length = op === "prod" ? 8 : (5 * 1048576) / (size === 3 ? 2 : 8);
      const input = new Float32Array(length);
      fillInput(input, op, 1, size);
      const differs = input.findIndex((v, i) => v !== inputValue(op, 1, size, i));
      assertEquals(differs, -1, `${op} ${size}: first input that differs`);

      const result = Float32Array.from(
        { length },
        (_, i) => expectedReduction(op, "f32", size, (r) => inputValue(op, r, size, i)),
      );
      assertEquals(wrongReduced(result, op, "f32", size), 0, `${op} ${size}`);
      result[length - 1] += 1; // in the last, partial period
      assertEquals(wrongReduced(result, op, "f32", size), 1, `${op} ${size}`);
    }
  }
});

Deno.test("report: sizes named as the CLI accepts them", () => {
  assertEquals([1, 512, 1024, 3072, 1536, 2 ** 20, 2 ** 28, 2 ** 30].map(sizeName), [
    "1",
    "512",
    "1K",
    "3K",
    "1536",
    "1M",
    "256M",
    "1G",
  ]);
});
