// Terms for the reproducible sums' tests: random, cancelling, spread over the whole exponent range,
// and special (subnormals, ±0, ±∞, NaN), each a value its dtype holds, the same for a seed.
import { fromStored, toStored } from "../kernels/elements.ts";
import type { ReproducibleDtype } from "../kernels/reproducible.ts";

/** A small seeded generator of numbers in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

export const TERM_KINDS = ["random", "cancelling", "spread", "special"] as const;
export type TermKind = (typeof TERM_KINDS)[number];

/** Least and largest exponents of each dtype's values. */
const RANGE: Record<ReproducibleDtype, [number, number]> = {
  f32: [-149, 127],
  f64: [-1074, 1023],
  f16: [-24, 15],
  bf16: [-133, 127],
};

/** `k` terms of `count` elements of `kind`, as `dtype` holds them. */
export function termsOf(
  kind: TermKind,
  dtype: ReproducibleDtype,
  k: number,
  count: number,
  seed: number,
): number[][] {
  const random = mulberry32(seed * 7919 + k);
  const [low, high] = RANGE[dtype];
  const big = dtype === "f16" ? 2 ** 14 : 2 ** 26;
  const value = (j: number, i: number): number => {
    const sign = random() < 0.5 ? -1 : 1;
    switch (kind) {
      case "random":
        return sign * (0.5 + random()) * 2 ** Math.floor(random() * 9 - 4);
      case "cancelling": {
        // big, 1, −big, … : what a sum in another order loses.
        const pair = Math.floor(j / 2) * 2 + 1 < k;
        if (j % 3 === 2) return 1 + i % 3;
        return pair ? (j % 2 === 0 ? big : -big) * (1 + (i % 5) / 8) : sign * random();
      }
      case "spread":
        return sign * (1 + random()) * 2 ** Math.floor(low + random() * (high - low));
      case "special": {
        const r = random();
        if (r < 0.05) return NaN;
        if (r < 0.12) return Infinity;
        if (r < 0.19) return -Infinity;
        if (r < 0.3) return random() < 0.5 ? 0 : -0;
        if (r < 0.5) return sign * Math.floor(1 + random() * 50) * 2 ** low; // subnormal
        return sign * random();
      }
    }
  };
  return Array.from(
    { length: k },
    (_, j) =>
      Array.from({ length: count }, (_, i) => fromStored(dtype, toStored(dtype, value(j, i)))),
  );
}
