/**
 * A small seeded generator (mulberry32) for parameter initialisation and data shuffling, so that
 * a run is reproducible from `--seed` on every rank and every launcher.
 * @module
 */

/** Uniform floats in [0, 1) from a 32-bit seed. */
export class Random {
  #state: number;

  /** A generator whose sequence depends only on `seed` (any integer; taken modulo 2^32). */
  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** The next float in [0, 1). */
  next(): number {
    let t = (this.#state = (this.#state + 0x6d2b79f5) | 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** A float in [lo, hi). */
  uniform(lo: number, hi: number): number {
    return lo + (hi - lo) * this.next();
  }

  /** A permutation of 0 … n−1 (Fisher–Yates). */
  permutation(n: number): Uint32Array {
    const p = new Uint32Array(n);
    for (let i = 0; i < n; i++) p[i] = i;
    for (let i = n - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      const t = p[i];
      p[i] = p[j];
      p[j] = t;
    }
    return p;
  }
}

/** A seed derived from a base seed and a purpose, so streams for different uses never coincide. */
export function deriveSeed(seed: number, ...salt: number[]): number {
  let h = seed >>> 0;
  for (const s of salt) {
    h = Math.imul(h ^ (s + 0x9e3779b9 + (h << 6) + (h >>> 2)), 0x85ebca6b) >>> 0;
  }
  return h;
}
