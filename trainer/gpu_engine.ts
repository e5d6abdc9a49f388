/**
 * The {@linkcode Engine} on a WebGPU device: the MLP in WGSL (kernels/mlp.wgsl), parameters,
 * gradients, momentum and activations resident on the device. Each batch is gathered on the host
 * and uploaded (`queue.writeBuffer`, no wait); a step's kernels are recorded, never awaited, and
 * its loss and accuracy are added up on the device, so the only read back is the scores, once
 * per epoch. Deno needs ~11 ms to await any completion, so one per step would dominate.
 *
 * Collectives use the device slabs themselves with `--memory gpu` (over the `gpu` transport,
 * with no copy at all; over host transports staged by the communicator) and slabs of another
 * kind otherwise, copied each way around every synchronisation.
 * @module
 */

import { type GpuCall, GpuMlpKernels, type Tensor } from "./kernels/mlp_gpu.ts";
import { MLP_REFERENCE } from "./kernels/mlp_reference.ts";
import {
  type CommBuffer,
  type Communicator,
  GpuBuffer,
  HostBuffer,
  type MemoryKind,
} from "../core.ts";
import type { GpuDevice } from "../internal.ts";
import { type Engine, type Score, SyncedSlab } from "./engine.ts";
import type { ImageSet } from "./mnist.ts";
import { type Activation, initParams, type MlpLayout } from "./model.ts";

/** Options of {@linkcode GpuEngine}. */
export interface GpuEngineOptions {
  activation: Activation;
  /** Most rows in a batch. */
  rows: number;
  lr: number;
  momentum: number;
  /** Memory kind of the slabs collectives use. */
  memory: MemoryKind;
}

/** Kernels per device: logical ranks of the `gpu` transport share theirs. */
const KERNELS = new WeakMap<GPUDevice, Promise<GpuMlpKernels>>();

/** Slots of the score buffer: training loss and hits, evaluation loss and hits. */
const TRAIN_SCORE = 0, EVAL_SCORE = 2;

/** A training step's calls: `segments[s]` ends with layer `last − s`'s gradients complete. */
interface StepPlan {
  segments: GpuCall[][];
}

/** One rank's MLP on its WebGPU device. */
export class GpuEngine implements Engine {
  readonly device = "gpu" as const;
  readonly kernels = "wgsl";
  readonly params: SyncedSlab;
  readonly grads: SyncedSlab;
  readonly #gpu: GpuDevice;
  readonly #k: GpuMlpKernels;
  readonly #layout: MlpLayout;
  readonly #options: GpuEngineOptions;
  readonly #buffers: GpuBuffer[] = [];
  readonly #weights: GpuBuffer;
  readonly #gradients: GpuBuffer;
  readonly #velocity: GpuBuffer;
  /** The momentum buffer, or none without momentum (the device buffer then holds one float). */
  readonly optimizerState: CommBuffer;
  readonly #input: GpuBuffer;
  /** Per batch row: its label, then its loss, then its hit (softmax_xent's layout). */
  readonly #batch: GpuBuffer;
  readonly #scores: GpuBuffer;
  readonly #acts: GpuBuffer[];
  readonly #dacts: GpuBuffer[];
  readonly #pixels: Float32Array;
  readonly #labels: Float32Array;
  readonly #plans = new Map<string, StepPlan | GpuCall[]>();
  #rows = 0;
  #trainRows = 0;
  #evalRows = 0;

  private constructor(
    comm: Communicator,
    gpu: GpuDevice,
    kernels: GpuMlpKernels,
    layout: MlpLayout,
    options: GpuEngineOptions,
  ) {
    this.#gpu = gpu;
    this.#k = kernels;
    this.#layout = layout;
    this.#options = options;
    const alloc = (count: number) => {
      const b = GpuBuffer.alloc(gpu, "f32", Math.max(count, 1));
      this.#buffers.push(b);
      return b;
    };
    const rows = options.rows;
    this.#weights = alloc(layout.size);
    this.#gradients = alloc(layout.size);
    this.#velocity = alloc(options.momentum !== 0 ? layout.size : 1);
    this.optimizerState = options.momentum !== 0
      ? this.#velocity
      : new HostBuffer(new Float32Array(0));
    this.#input = alloc(rows * layout.inputs);
    this.#batch = alloc(3 * rows);
    this.#scores = alloc(4);
    this.#acts = layout.layers.map((s) => alloc(rows * s.outputs));
    this.#dacts = layout.layers.map((s) => alloc(rows * s.outputs));
    this.#pixels = new Float32Array(rows * layout.inputs);
    this.#labels = new Float32Array(rows);
    const slab = (local: GpuBuffer) =>
      new SyncedSlab(
        local,
        options.memory === "gpu" ? local : comm.alloc(layout.size, { memory: options.memory }),
      );
    this.params = slab(this.#weights);
    this.grads = slab(this.#gradients);
  }

  /** An engine on the rank's device (the group must have opened one). */
  static async create(
    comm: Communicator,
    layout: MlpLayout,
    options: GpuEngineOptions,
  ): Promise<GpuEngine> {
    const gpu = comm.gpu;
    if (!gpu) {
      throw new TypeError("Cannot train on the gpu: this rank has no WebGPU device");
    }
    const bytes = Math.max(layout.size, options.rows * Math.max(...layout.widths)) * 4;
    if (bytes > gpu.info.limits.maxStorageBufferBindingSize) {
      throw new RangeError(
        `Cannot train this model on ${gpu.info.description}: a ${bytes}-byte buffer exceeds its ` +
          `${gpu.info.limits.maxStorageBufferBindingSize}-byte storage binding limit`,
      );
    }
    let kernels = KERNELS.get(gpu.device);
    if (!kernels) KERNELS.set(gpu.device, kernels = GpuMlpKernels.create(gpu.device));
    return new GpuEngine(comm, gpu, await kernels, layout, options);
  }

  get layers(): number {
    return this.#layout.layers.length;
  }

  span(layer: number): [number, number] {
    return this.#layout.span(layer);
  }

  async initParams(seed: number): Promise<void> {
    const host = new Float32Array(this.#layout.size);
    initParams(this.#layout, host, seed);
    await this.#weights.write(host);
  }

  load(set: ImageSet, indices: ArrayLike<number>): void {
    const n = this.#rows = indices.length;
    const rows = Uint32Array.from(indices);
    const pixels = this.#pixels.subarray(0, n * set.pixels);
    MLP_REFERENCE.gather(pixels, set, rows);
    for (let r = 0; r < n; r++) this.#labels[r] = set.labels[rows[r]];
    this.#gpu.write(this.#input.buffer, this.#input.byteOffset, pixels);
    this.#gpu.write(this.#batch.buffer, this.#batch.byteOffset, this.#labels.subarray(0, n));
  }

  trainStep(accumulate: boolean, ready?: (layer: number) => void): void {
    const plan = this.#stepPlan(this.#rows, accumulate);
    const last = this.layers - 1;
    plan.segments.forEach((calls, s) => {
      this.#record(calls);
      ready?.(last - s);
    });
    this.#trainRows += this.#rows;
  }

  update(scale: number): void {
    const key = `update:${scale}`;
    let calls = this.#plans.get(key) as GpuCall[] | undefined;
    if (!calls) {
      const { lr, momentum } = this.#options;
      calls = [
        this.#k.sgd(
          this.#weights.buffer,
          this.#gradients.buffer,
          this.#velocity.buffer,
          this.#layout.size,
          { lr, momentum, scale },
        ),
      ];
      this.#plans.set(key, calls);
    }
    this.#record(calls);
  }

  evaluate(): void {
    const key = `eval:${this.#rows}`;
    let calls = this.#plans.get(key) as GpuCall[] | undefined;
    if (!calls) {
      calls = [...this.#forward(this.#rows), ...this.#loss(this.#rows, EVAL_SCORE)];
      this.#plans.set(key, calls);
    }
    this.#record(calls);
    this.#evalRows += this.#rows;
  }

  async takeScores(): Promise<{ train: Score; eval: Score }> {
    const s = new Float32Array(4);
    await this.#scores.read(s);
    await this.#scores.write(new Float32Array(4));
    const scores = {
      train: { loss: s[TRAIN_SCORE], correct: s[TRAIN_SCORE + 1], rows: this.#trainRows },
      eval: { loss: s[EVAL_SCORE], correct: s[EVAL_SCORE + 1], rows: this.#evalRows },
    };
    this.#trainRows = this.#evalRows = 0;
    return scores;
  }

  synchronize(): Promise<void> {
    return this.#gpu.synchronize();
  }

  dispose(): void {
    for (const b of this.#buffers.splice(0)) b.destroy();
  }

  #record(calls: GpuCall[]): void {
    const pass = this.#gpu.encoder().beginComputePass();
    this.#k.record(pass, calls);
    pass.end();
  }

  #tensor(b: GpuBuffer, offset = 0): Tensor {
    return { buffer: b.buffer, offset: b.byteOffset / 4 + offset };
  }

  #forward(rows: number): GpuCall[] {
    const layout = this.#layout;
    const last = layout.layers.length - 1;
    const calls: GpuCall[] = [];
    layout.layers.forEach((s, l) => {
      const hidden = l < last;
      const inp = l === 0 ? this.#input : this.#acts[l - 1];
      calls.push(this.#k.gemm(
        this.#tensor(this.#acts[l]),
        this.#tensor(inp),
        this.#tensor(this.#weights, s.weight),
        rows,
        s.outputs,
        s.inputs,
        {
          bias: this.#tensor(this.#weights, s.bias),
          relu: hidden && this.#options.activation === "relu",
        },
      ));
      if (hidden && this.#options.activation === "sigmoid") {
        calls.push(this.#k.sigmoidForward(this.#tensor(this.#acts[l]), rows * s.outputs));
      }
    });
    return calls;
  }

  /** Softmax cross-entropy of the logits (gradients of the batch mean) and its score. */
  #loss(rows: number, slot: number): GpuCall[] {
    const last = this.layers - 1;
    return [
      this.#k.softmaxXent(
        this.#tensor(this.#dacts[last]),
        this.#tensor(this.#acts[last]),
        this.#tensor(this.#batch),
        rows,
        this.#layout.outputs,
        1 / rows,
      ),
      this.#k.score(this.#tensor(this.#scores, slot), this.#tensor(this.#batch), rows),
    ];
  }

  #stepPlan(rows: number, accumulate: boolean): StepPlan {
    const key = `train:${rows}:${accumulate}`;
    const cached = this.#plans.get(key) as StepPlan | undefined;
    if (cached) return cached;
    const layout = this.#layout;
    const k = this.#k;
    const segments: GpuCall[][] = [];
    let calls = [...this.#forward(rows), ...this.#loss(rows, TRAIN_SCORE)];
    for (let l = layout.layers.length - 1; l >= 0; l--) {
      const s = layout.layers[l];
      const inp = l === 0 ? this.#input : this.#acts[l - 1];
      const dout = this.#tensor(this.#dacts[l]);
      calls.push(
        k.gemm(
          this.#tensor(this.#gradients, s.weight),
          this.#tensor(inp),
          dout,
          s.inputs,
          s.outputs,
          rows,
          { transA: true, accumulate },
        ),
        k.colsum(this.#tensor(this.#gradients, s.bias), dout, rows, s.outputs, accumulate),
      );
      segments.push(calls);
      calls = [];
      if (l === 0) break;
      const dinp = this.#tensor(this.#dacts[l - 1]);
      const out = this.#tensor(this.#acts[l - 1]);
      calls.push(
        k.gemm(dinp, dout, this.#tensor(this.#weights, s.weight), rows, s.inputs, s.outputs, {
          transB: true,
        }),
        this.#options.activation === "relu"
          ? k.reluBackward(dinp, out, rows * s.inputs)
          : k.sigmoidBackward(dinp, out, rows * s.inputs),
      );
    }
    const plan = { segments };
    this.#plans.set(key, plan);
    return plan;
  }
}
