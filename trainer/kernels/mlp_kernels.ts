/**
 * What the trainer's CPU model needs from its kernels, implemented twice: WebAssembly SIMD
 * (`mlp.ts`, the fast path) and plain JS (`mlp_reference.ts`, what tests compare against).
 * Matrices are dense, row-major Float32Arrays.
 * @module
 */

/** Options of {@linkcode MlpKernels.gemm}. */
export interface GemmOptions {
  /** A is stored k × m and used transposed. @default {false} */
  transA?: boolean;
  /** B is stored n × k and used transposed. @default {false} */
  transB?: boolean;
  /** A row vector of n added to every row of C. */
  bias?: Float32Array;
  /** Apply ReLU to C on store. @default {false} */
  relu?: boolean;
  /** Add the product to C instead of overwriting it. @default {false} */
  accumulate?: boolean;
}

/** Images as bytes, `pixels` per image, row after row, in a shared WebAssembly memory. */
export interface PixelSource {
  images: Uint8Array;
  pixels: number;
  memory: WebAssembly.Memory;
}

/** The trainer's CPU kernels. */
export interface MlpKernels {
  /** Which implementation: `relaxed` or `plain` WebAssembly SIMD, or `js`. */
  readonly name: string;
  /** C (m × n) = op(A) · op(B) (+ bias, + C, ReLU as asked); op(A) is m × k, op(B) is k × n. */
  gemm(
    c: Float32Array,
    a: Float32Array,
    b: Float32Array,
    m: number,
    n: number,
    k: number,
    options?: GemmOptions,
  ): void;
  /** input (rows.length × pixels) = the images numbered `rows`, each byte divided by 255. */
  gather(input: Float32Array, from: PixelSource, rows: Uint32Array): void;
  /** ReLU's backward: `d[i] = 0` wherever `a[i] ≤ 0` (a: the layer's output). */
  reluBackward(d: Float32Array, a: Float32Array): void;
  /**
   * The reproducible gradient's terms (sync/reproducible.ts): `sums[i·O + o] +=` Σ over the
   * rows of `((a[r, i]·inverse[i])·d[r, o] + rounders[o]) − rounders[o]`, a's zeros skipped
   * (every sum exact: the same bits in any implementation).
   */
  roundedProducts(
    sums: Float64Array,
    a: Float32Array,
    d: Float32Array,
    inverse: Float64Array,
    rounders: Float64Array,
    rows: number,
  ): void;
  /** `dst[j] = Σᵢ src[i, j]` over a rows × dst.length matrix (+ dst when accumulating). */
  colsum(dst: Float32Array, src: Float32Array, rows: number, accumulate?: boolean): void;
  /**
   * PyTorch's SGD on `g·scale`: with momentum `v = μ·v + g·scale; p −= lr·v`, without
   * `p −= lr·g·scale` (v untouched).
   */
  sgd(
    p: Float32Array,
    g: Float32Array,
    v: Float32Array,
    lr: number,
    momentum: number,
    scale: number,
  ): void;
}
