/**
 * `--reproducible` (allreduce, every batch): gradients whose bits depend only on the global
 * batch's rows, not on how many ranks share them, the transport or the algorithm. A weight's
 * gradient is a sum over rows of products a·d (the layer's input times its output gradient, each
 * row's computed alone); the sum follows the rule of the library's reproducible sums
 * (kernels/reproducible.ts): every product, exact in f64, is rounded to a multiple of 2^G, the
 * rounded products are summed exactly in f64 — on each rank over its rows, then over the ranks by
 * an f64 allreduce, whose additions are exact too — and the sum is rounded once to f32.
 *
 * G is 40 bits below a bound on every product of the weight: the largest |a| of its input over
 * the global batch times the largest |d| of its output, as 2^(e+1) each (one allreduce of the
 * columns' exponents: inputs + outputs per layer, not inputs × outputs). A bias's terms are the
 * d themselves. Rows are each rank's own and unscaled (the update divides by the global batch),
 * so the same rows give the same terms on any number of ranks; at most 8192 rows a batch.
 * @module
 */

import type { Communicator, HostBuffer } from "../../core.ts";
import type { CpuModel } from "../cpu_model.ts";
import type { MlpLayout } from "../model.ts";

/** Most rows of a global batch: 8192 products of 40 bits sum exactly below 2^53. */
export const MAX_REPRODUCIBLE_ROWS = 8192;

/** Exponents are kept as e + this (0: the column is all zeros), so that max is theirs. */
const EXPONENT_BIAS = 200;
const F32 = new Float32Array(1), F32_BITS = new Uint32Array(F32.buffer);

/** floor(log2 |x|) + EXPONENT_BIAS of an f32, or 0 for a zero. */
function exponentCode(x: number): number {
  F32[0] = x;
  const u = F32_BITS[0], field = (u >>> 23) & 255, m = u & 0x7fffff;
  if (field !== 0) return field - 127 + EXPONENT_BIAS;
  return m === 0 ? 0 : 31 - Math.clz32(m) - 149 + EXPONENT_BIAS;
}

/** A layer's share of the exponents and of the kernel's factors. */
interface LayerColumns {
  /** The exponent codes of its inputs and of its outputs (views of the allreduced buffer). */
  inputCodes: Float32Array;
  outputCodes: Float32Array;
  /** 2^−ea of each input and 1.5·2^(ed+14) of each output, in the heap for the kernel. */
  inverse: Float64Array;
  rounders: Float64Array;
}

/** One rank's reproducible gradients: the columns' exponents and the f64 sums it allreduces. */
export class ReproducibleGradients {
  readonly #comm: Communicator;
  readonly #model: CpuModel;
  readonly #layout: MlpLayout;
  /** Per layer, its inputs' exponents then its outputs'. */
  readonly #codes: HostBuffer<Float32Array>;
  /** The gradient slab's sums, element by element. */
  readonly #sums: HostBuffer<Float64Array>;
  readonly #columns: LayerColumns[];

  constructor(comm: Communicator, model: CpuModel) {
    this.#comm = comm;
    this.#model = model;
    this.#layout = model.layout;
    const columns = this.#layout.layers.reduce((n, s) => n + s.inputs + s.outputs, 0);
    this.#codes = comm.alloc(columns) as HostBuffer<Float32Array>;
    this.#sums = comm.alloc(this.#layout.size, { dtype: "f64" }) as HostBuffer<Float64Array>;
    let at = 0;
    this.#columns = this.#layout.layers.map((s) => {
      const codes = this.#codes.view.subarray(at, at += s.inputs + s.outputs);
      return {
        inputCodes: codes.subarray(0, s.inputs),
        outputCodes: codes.subarray(s.inputs),
        inverse: comm.heap.alloc("f64", s.inputs) as Float64Array,
        rounders: comm.heap.alloc("f64", s.outputs) as Float64Array,
      };
    });
  }

  /**
   * The model's gradients ← the reproducible sums of its last step's `rows` rows over every
   * rank; `laps` charges the time to computation and communication.
   */
  async sync(rows: number, laps: (what: "compute" | "comm") => void): Promise<void> {
    const layers = this.#layout.layers;
    layers.forEach((s, l) => {
      const { input, output } = this.#model.factors(l), c = this.#columns[l];
      columnCodes(c.inputCodes, input, rows, s.inputs);
      columnCodes(c.outputCodes, output, rows, s.outputs);
    });
    laps("compute");
    await this.#comm.allreduce(this.#codes, { op: "max" });
    laps("comm");
    const sums = this.#sums.view;
    layers.forEach((s, l) => {
      const { input, output } = this.#model.factors(l);
      const { inputCodes, outputCodes, inverse, rounders } = this.#columns[l];
      // Products a·d rounded to 2^G, G = ea + ed + 2 − 40, in units of 2^ea: x + M − M rounds x
      // to a multiple of 2^G for M = 1.5·2^(G+52), so a/2^ea · d + 1.5·2^(ed+14) − … does.
      inputCodes.forEach((c, i) => inverse[i] = c === 0 ? 0 : 1 / power(c));
      outputCodes.forEach((c, o) => rounders[o] = 1.5 * 2 ** 14 * power(c));
      const weight = sums.subarray(s.weight, s.weight + s.inputs * s.outputs).fill(0);
      this.#model.kernels.roundedProducts(weight, input, output, inverse, rounders, rows);
      columnSums(sums.subarray(s.bias, s.bias + s.outputs), output, outputCodes, rows, s.outputs);
    });
    laps("compute");
    await this.#comm.allreduce(this.#sums, { op: "sum" });
    laps("comm");
    // One rounding of each exact sum (the weights' back from their units first).
    const grads = this.#model.grads;
    layers.forEach((s, l) => {
      gradientsOf(grads, sums, s.weight, this.#columns[l].inputCodes, s.outputs);
      grads.set(sums.subarray(s.bias, s.bias + s.outputs), s.bias);
    });
    laps("compute");
  }

  dispose(): void {
    this.#comm.free(this.#codes);
    this.#comm.free(this.#sums);
    for (const c of this.#columns) {
      this.#comm.heap.free(c.inverse);
      this.#comm.heap.free(c.rounders);
    }
  }
}

/** `codes[j]` ← the largest exponent code of column j of `m` (rows × cols). */
function columnCodes(codes: Float32Array, m: Float32Array, rows: number, cols: number): void {
  codes.fill(0);
  for (let r = 0; r < rows; r++) {
    const row = r * cols;
    for (let j = 0; j < cols; j++) {
      if (m[row + j] === 0) continue;
      const c = exponentCode(m[row + j]);
      if (c > codes[j]) codes[j] = c;
    }
  }
}

/** 2^(code − bias), the bound's power of a column (0 for an all-zero one). */
const power = (code: number) => code === 0 ? 0 : 2 ** (code - EXPONENT_BIAS);

/** `grads[offset + i·O + o]` ← the sum there times 2^ea of input i (its units), rounded once. */
function gradientsOf(
  grads: Float32Array,
  sums: Float64Array,
  offset: number,
  aCodes: Float32Array,
  O: number,
): void {
  for (let i = 0; i < aCodes.length; i++) {
    const scale = power(aCodes[i]), w = offset + i * O;
    for (let o = 0; o < O; o++) grads[w + o] = sums[w + o] * scale;
  }
}

/** `sums[o]` ← Σ over rows of d[r][o] rounded to 2^G, G = ed + 1 − 40 (a bias's gradient). */
function columnSums(
  sums: Float64Array,
  d: Float32Array,
  dCodes: Float32Array,
  rows: number,
  O: number,
): void {
  sums.fill(0);
  for (let o = 0; o < O; o++) {
    const m = 1.5 * 2 ** 13 * power(dCodes[o]);
    for (let r = 0; r < rows; r++) sums[o] += (d[r * O + o] + m) - m;
  }
}
