/**
 * The trainer's kernels in plain JS: the reference the WebAssembly kernels are tested against
 * (sums in f64, rounded once to f32), and the kernels for arrays outside a WebAssembly heap.
 * @module
 */

import type { GemmOptions, MlpKernels } from "./mlp_kernels.ts";

/** Bytes as inputs: byte / 255, rounded once to f32. */
const PIXEL = Float32Array.from({ length: 256 }, (_, i) => i / 255);

/** Plain-JS {@linkcode MlpKernels}. */
export const MLP_REFERENCE: MlpKernels = {
  name: "js",
  gemm(c, a, b, m, n, k, options: GemmOptions = {}) {
    const { transA = false, transB = false, bias, relu = false, accumulate = false } = options;
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let s = 0;
        for (let kk = 0; kk < k; kk++) {
          s += (transA ? a[kk * m + i] : a[i * k + kk]) * (transB ? b[j * k + kk] : b[kk * n + j]);
        }
        if (bias) s += bias[j];
        if (accumulate) s += c[i * n + j];
        c[i * n + j] = relu && !(s > 0) ? 0 : s;
      }
    }
  },
  gather(input, { images, pixels }, rows) {
    for (let r = 0; r < rows.length; r++) {
      const from = rows[r] * pixels, to = r * pixels;
      for (let p = 0; p < pixels; p++) input[to + p] = PIXEL[images[from + p]];
    }
  },
  reluBackward(d, a) {
    for (let i = 0; i < d.length; i++) if (!(a[i] > 0)) d[i] = 0;
  },
  roundedProducts(sums, a, d, inverse, rounders, rows) {
    const I = inverse.length, O = rounders.length;
    for (let r = 0; r < rows; r++) {
      for (let i = 0; i < I; i++) {
        const x = a[r * I + i];
        if (x === 0) continue;
        const xs = x * inverse[i];
        for (let o = 0; o < O; o++) {
          sums[i * O + o] += (xs * d[r * O + o] + rounders[o]) - rounders[o];
        }
      }
    }
  },
  colsum(dst, src, rows, accumulate = false) {
    const cols = dst.length;
    for (let j = 0; j < cols; j++) {
      let s = accumulate ? dst[j] : 0;
      for (let i = 0; i < rows; i++) s += src[i * cols + j];
      dst[j] = s;
    }
  },
  sgd(p, g, v, lr, momentum, scale) {
    for (let i = 0; i < p.length; i++) {
      let step = g[i] * scale;
      if (momentum !== 0) step = v[i] = momentum * v[i] + step;
      p[i] -= lr * step;
    }
  },
};
