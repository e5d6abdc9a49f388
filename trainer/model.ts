/**
 * The MLP's shape and its parameters' layout, shared by the CPU and GPU models: every layer's
 * weight (inputs × outputs, row-major, so a forward pass is X·W) and bias sit in one contiguous
 * slab, layer after layer (llm.c), so data-parallel synchronisation is one collective over it.
 * Gradients use the same layout in a second slab.
 * @module
 */

import { Random } from "./random.ts";

/** Hidden layers' activation. */
export type Activation = "relu" | "sigmoid";
/** Accepted activations. */
export const ACTIVATIONS: readonly Activation[] = ["relu", "sigmoid"];

/** Where one layer's tensors sit in a slab, in elements. */
export interface LayerSlots {
  /** Its input width. */
  inputs: number;
  /** Its output width. */
  outputs: number;
  /** Offset of the weight (inputs × outputs). */
  weight: number;
  /** Offset of the bias (outputs). */
  bias: number;
}

/**
 * The layout of an MLP with `widths` = [inputs, hidden…, outputs].
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { MlpLayout } from "./model.ts";
 *
 * const layout = new MlpLayout([784, 256, 10]);
 * assertEquals(layout.size, 784 * 256 + 256 + 256 * 10 + 10); // 203530
 * ```
 */
export class MlpLayout {
  /** Widths, inputs first. */
  readonly widths: readonly number[];
  /** Each layer's slots, input layer first. */
  readonly layers: readonly LayerSlots[];
  /** Elements in a parameter (or gradient) slab. */
  readonly size: number;

  /** The layout of an MLP of `widths`, inputs first. */
  constructor(widths: readonly number[]) {
    if (widths.length < 2 || widths.some((w) => !Number.isInteger(w) || w < 1)) {
      throw new RangeError(`An MLP needs at least two positive integer widths, got ${widths}`);
    }
    this.widths = widths;
    const layers: LayerSlots[] = [];
    let offset = 0;
    for (let l = 0; l + 1 < widths.length; l++) {
      const [inputs, outputs] = [widths[l], widths[l + 1]];
      layers.push({ inputs, outputs, weight: offset, bias: offset + inputs * outputs });
      offset += inputs * outputs + outputs;
    }
    this.layers = layers;
    this.size = offset;
  }

  /** Inputs of the network. */
  get inputs(): number {
    return this.widths[0];
  }

  /** Outputs (classes) of the network. */
  get outputs(): number {
    return this.widths[this.widths.length - 1];
  }

  /** Multiply-adds of one sample's forward pass. */
  get forwardMacs(): number {
    return this.layers.reduce((s, l) => s + l.inputs * l.outputs, 0);
  }

  /**
   * Multiply-adds of one sample's training step: forward, every weight gradient, and every
   * input gradient but the first layer's.
   */
  get trainMacs(): number {
    return 2 * this.forwardMacs +
      this.layers.slice(1).reduce((s, l) => s + l.inputs * l.outputs, 0);
  }

  /** Layer `l`'s weight in `slab`. */
  weight<T extends Float32Array>(slab: T, l: number): T {
    const s = this.layers[l];
    return slab.subarray(s.weight, s.weight + s.inputs * s.outputs) as T;
  }

  /** Layer `l`'s bias in `slab`. */
  bias<T extends Float32Array>(slab: T, l: number): T {
    const s = this.layers[l];
    return slab.subarray(s.bias, s.bias + s.outputs) as T;
  }

  /** Elements `[start, end)` of the slab that layer `l` occupies. */
  span(l: number): [number, number] {
    const s = this.layers[l];
    return [s.weight, s.bias + s.outputs];
  }
}

/**
 * Fills `params` like `torch.nn.Linear`'s default: weights and biases uniform in ±1/√fan_in,
 * from `seed` alone (so every rank that initialises with the same seed agrees).
 */
export function initParams(layout: MlpLayout, params: Float32Array, seed: number): void {
  const random = new Random(seed);
  for (const s of layout.layers) {
    const bound = 1 / Math.sqrt(s.inputs);
    for (let i = s.weight; i < s.bias + s.outputs; i++) params[i] = random.uniform(-bound, bound);
  }
}
