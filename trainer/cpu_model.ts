/**
 * The MLP on the CPU: llm.c-style forward/backward pairs over the kernels of kernels/mlp.ts (or
 * their JS reference), and {@linkcode CpuModel}, which owns one rank's parameters, gradients,
 * momentum and activations.
 *
 * Shape legend: B rows in the batch, I a layer's inputs, O its outputs, C classes. Matrices are
 * row-major; a layer's weight is I × O.
 * @module
 */

import type { MlpKernels } from "./kernels/mlp_kernels.ts";
import type { Activation, MlpLayout } from "./model.ts";

/** Loss summed over a batch's rows, and how many rows the model classified right. */
export interface BatchScore {
  loss: number;
  correct: number;
}

/** out (B×O) = act(inp (B×I) · weight (I×O) + bias); ReLU fused into the GEMM. */
export function linearForward(
  k: MlpKernels,
  out: Float32Array,
  inp: Float32Array,
  weight: Float32Array,
  bias: Float32Array,
  B: number,
  I: number,
  O: number,
  relu: boolean,
): void {
  k.gemm(out, inp, weight, B, O, I, { bias, relu });
}

/**
 * Unless `weights` is undefined, its dweight (I×O) (+)= inpᵀ·dout and dbias (O) (+)= Σ rows of
 * dout (added to when `accumulate`); unless `dinp` is undefined (the first layer), dinp (B×I) =
 * dout·weightᵀ.
 */
export function linearBackward(
  k: MlpKernels,
  dinp: Float32Array | undefined,
  weights: { dweight: Float32Array; dbias: Float32Array; accumulate: boolean } | undefined,
  dout: Float32Array,
  inp: Float32Array,
  weight: Float32Array,
  B: number,
  I: number,
  O: number,
): void {
  if (weights) {
    const { dweight, dbias, accumulate } = weights;
    k.gemm(dweight, inp, dout, I, O, B, { transA: true, accumulate });
    k.colsum(dbias, dout, B, accumulate);
  }
  if (dinp) k.gemm(dinp, dout, weight, B, I, O, { transB: true });
}

/** x = σ(x) over the first n elements, in place. */
export function sigmoidForward(x: Float32Array, n: number): void {
  for (let i = 0; i < n; i++) x[i] = 1 / (1 + Math.exp(-x[i]));
}

/** dout *= out·(1 − out) over the first n elements, out being σ's output. */
export function sigmoidBackward(dout: Float32Array, out: Float32Array, n: number): void {
  for (let i = 0; i < n; i++) dout[i] *= out[i] * (1 - out[i]);
}

/**
 * probs (B×C) = softmax(logits); returns the summed cross-entropy of the labels and how many
 * rows' largest logit is the label's (the first, on ties).
 */
export function softmaxCrossEntropyForward(
  probs: Float32Array,
  logits: Float32Array,
  labels: Uint8Array,
  B: number,
  C: number,
): BatchScore {
  let loss = 0, correct = 0;
  for (let b = 0; b < B; b++) {
    const row = b * C;
    let max = logits[row], arg = 0;
    for (let c = 1; c < C; c++) {
      if (logits[row + c] > max) [max, arg] = [logits[row + c], c];
    }
    let sum = 0;
    for (let c = 0; c < C; c++) sum += probs[row + c] = Math.exp(logits[row + c] - max);
    for (let c = 0; c < C; c++) probs[row + c] /= sum;
    loss += Math.log(sum) - (logits[row + labels[b]] - max);
    if (arg === labels[b]) correct++;
  }
  return { loss, correct };
}

/** dlogits (B×C) = (probs − onehot(labels))·scale; dlogits may be probs. */
export function softmaxCrossEntropyBackward(
  dlogits: Float32Array,
  probs: Float32Array,
  labels: Uint8Array,
  B: number,
  C: number,
  scale: number,
): void {
  for (let b = 0; b < B; b++) {
    for (let c = 0; c < C; c++) {
      const i = b * C + c;
      dlogits[i] = (probs[i] - (c === labels[b] ? 1 : 0)) * scale;
    }
  }
}

/** Options of {@linkcode CpuModel}. */
export interface CpuModelOptions {
  /** Hidden layers' activation. */
  activation: Activation;
  /** Most rows a batch (training or evaluation) may have. */
  rows: number;
  /** Keeps a momentum buffer. */
  momentum: boolean;
  /**
   * Leaves the weight and bias gradients to a reproducible sum of the rows' terms
   * (sync/reproducible.ts): a step computes the layers' output gradients, unscaled by the rows.
   */
  reproducible?: boolean;
}

/**
 * One rank's MLP on the CPU. Every array comes from `alloc` (a rank heap, so the WebAssembly
 * kernels reach them); `params` and `grads` are slabs in {@linkcode MlpLayout}'s order.
 */
export class CpuModel {
  readonly layout: MlpLayout;
  readonly kernels: MlpKernels;
  readonly params: Float32Array;
  readonly grads: Float32Array;
  /** SGD momentum (empty without momentum). */
  readonly velocity: Float32Array;
  /** The batch's inputs, rows × inputs, filled by the caller. */
  readonly input: Float32Array;
  /** The batch's labels, filled by the caller. */
  readonly labels: Uint8Array;
  readonly #activation: Activation;
  readonly #reproducible: boolean;
  /** Each layer's output (rows × O); the last is the logits. */
  readonly #acts: Float32Array[];
  /** Each layer's output gradient (rows × O); the last holds softmax's probabilities first. */
  readonly #dacts: Float32Array[];

  constructor(
    layout: MlpLayout,
    kernels: MlpKernels,
    alloc: (count: number) => Float32Array,
    options: CpuModelOptions,
  ) {
    this.layout = layout;
    this.kernels = kernels;
    this.#activation = options.activation;
    this.#reproducible = options.reproducible ?? false;
    this.params = alloc(layout.size);
    this.grads = alloc(layout.size);
    this.velocity = alloc(options.momentum ? layout.size : 0);
    this.input = alloc(options.rows * layout.inputs);
    this.labels = new Uint8Array(options.rows);
    this.#acts = layout.layers.map((s) => alloc(options.rows * s.outputs));
    this.#dacts = layout.layers.map((s) => alloc(options.rows * s.outputs));
  }

  /** Forward pass over the first `rows` rows of {@linkcode input}; returns the logits. */
  forward(rows: number): Float32Array {
    const { layout, kernels: k } = this;
    const last = layout.layers.length - 1;
    layout.layers.forEach((s, l) => {
      const inp = l === 0 ? this.input : this.#acts[l - 1];
      const hidden = l < last;
      const relu = hidden && this.#activation === "relu";
      linearForward(
        k,
        this.#acts[l],
        inp,
        layout.weight(this.params, l),
        layout.bias(this.params, l),
        rows,
        s.inputs,
        s.outputs,
        relu,
      );
      if (hidden && this.#activation === "sigmoid") sigmoidForward(this.#acts[l], rows * s.outputs);
    });
    return this.#acts[last];
  }

  /** The loss and accuracy of the first `rows` rows, without gradients. */
  evaluate(rows: number): BatchScore {
    const logits = this.forward(rows);
    const probs = this.#dacts[this.#dacts.length - 1];
    return softmaxCrossEntropyForward(probs, logits, this.labels, rows, this.layout.outputs);
  }

  /**
   * Forward, loss and backward over the first `rows` rows: gradients of the batch's mean loss go
   * into {@linkcode grads} (added to them when `accumulate`). `ready(l)` runs as soon as layer
   * `l`'s gradients are complete, last layer first, so their synchronisation may start.
   */
  trainStep(rows: number, accumulate: boolean, ready?: (layer: number) => void): BatchScore {
    const { layout, kernels: k } = this;
    const last = layout.layers.length - 1;
    const score = this.evaluate(rows);
    const dlogits = this.#dacts[last];
    const scale = this.#reproducible ? 1 : 1 / rows;
    softmaxCrossEntropyBackward(dlogits, dlogits, this.labels, rows, layout.outputs, scale);
    for (let l = last; l >= 0; l--) {
      const s = layout.layers[l];
      const dinp = l > 0 ? this.#dacts[l - 1] : undefined;
      // Reproducibly, the weights' gradients are the rows' sum, made elsewhere.
      const weights = this.#reproducible ? undefined : {
        dweight: layout.weight(this.grads, l),
        dbias: layout.bias(this.grads, l),
        accumulate,
      };
      linearBackward(
        k,
        dinp,
        weights,
        this.#dacts[l],
        l === 0 ? this.input : this.#acts[l - 1],
        layout.weight(this.params, l),
        rows,
        s.inputs,
        s.outputs,
      );
      ready?.(l);
      if (!dinp) continue;
      const n = rows * s.inputs;
      const out = this.#acts[l - 1];
      if (this.#activation === "relu") k.reluBackward(dinp.subarray(0, n), out.subarray(0, n));
      else sigmoidBackward(dinp, out, n);
    }
    return score;
  }

  /**
   * Layer `l`'s factors of the last step: its input (rows × I) and its output gradient
   * (rows × O), whose rows' products are its weight gradient's terms.
   */
  factors(l: number): { input: Float32Array; output: Float32Array } {
    return { input: l === 0 ? this.input : this.#acts[l - 1], output: this.#dacts[l] };
  }

  /** One SGD step on the gradients times `scale` (1/K after K accumulated batches). */
  update(lr: number, momentum: number, scale: number): void {
    this.kernels.sgd(this.params, this.grads, this.velocity, lr, momentum, scale);
  }
}
