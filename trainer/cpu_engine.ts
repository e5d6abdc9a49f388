/**
 * The {@linkcode Engine} on the CPU: {@linkcode CpuModel} over the WebAssembly kernels, every
 * array in the rank's heap. Collectives use the heap slabs themselves with `--memory shared`, and
 * slabs of the asked kind (copied each way around every synchronisation) otherwise.
 * @module
 */

import { WasmMlpKernels } from "./kernels/mlp.ts";
import type { MlpKernels } from "./kernels/mlp_kernels.ts";
import { MLP_REFERENCE } from "./kernels/mlp_reference.ts";
import { type CommBuffer, type Communicator, HostBuffer, type MemoryKind } from "../core.ts";
import type { RankHeap } from "../internal.ts";
import { CpuModel } from "./cpu_model.ts";
import type { Engine, Score } from "./engine.ts";
import { SyncedSlab } from "./engine.ts";
import type { ImageSet } from "./mnist.ts";
import { type Activation, initParams, type MlpLayout } from "./model.ts";

/** Options of {@linkcode CpuEngine}. */
export interface CpuEngineOptions {
  activation: Activation;
  /** Most rows in a batch. */
  rows: number;
  lr: number;
  momentum: number;
  /** Memory kind of the slabs collectives use. */
  memory: MemoryKind;
  /** `js` runs the plain-JS reference kernels (tests). @default {"wasm"} */
  kernels?: "wasm" | "js";
  /** The memory holding the data set's images, which `gather` reads. */
  data: WebAssembly.Memory;
  /** Leaves the weights' gradients to a reproducible sum (sync/reproducible.ts). */
  reproducible?: boolean;
}

const zero = (): Score => ({ loss: 0, correct: 0, rows: 0 });

/** One rank's MLP on the CPU. */
export class CpuEngine implements Engine {
  readonly device = "cpu" as const;
  readonly kernels: string;
  readonly params: SyncedSlab;
  readonly grads: SyncedSlab;
  readonly model: CpuModel;
  readonly optimizerState: CommBuffer;
  readonly #layout: MlpLayout;
  readonly #options: CpuEngineOptions;
  readonly #heap: RankHeap;
  readonly #owned: (Float32Array | Int32Array)[] = [];
  /** The batch's row numbers, in the heap for the gather kernel. */
  readonly #batchRows: Uint32Array;
  #rows = 0;
  #train = zero();
  #eval = zero();

  constructor(comm: Communicator, layout: MlpLayout, options: CpuEngineOptions) {
    this.#layout = layout;
    this.#options = options;
    this.#heap = comm.heap;
    const kernels: MlpKernels = options.kernels === "js"
      ? MLP_REFERENCE
      : new WasmMlpKernels(this.#heap, { data: options.data });
    this.kernels = kernels.name;
    this.model = new CpuModel(layout, kernels, (n) => {
      const a = this.#heap.alloc("f32", n) as Float32Array;
      this.#owned.push(a);
      return a;
    }, {
      activation: options.activation,
      rows: options.rows,
      momentum: options.momentum !== 0,
      reproducible: options.reproducible,
    });
    this.optimizerState = new HostBuffer(this.model.velocity);
    const slab = (local: Float32Array) => {
      const here = new HostBuffer(local, "shared");
      return new SyncedSlab(
        here,
        options.memory === "shared" ? here : comm.alloc(layout.size, { memory: options.memory }),
      );
    };
    const rows = this.#heap.alloc("i32", options.rows);
    this.#owned.push(rows as Int32Array);
    this.#batchRows = new Uint32Array(rows.buffer, rows.byteOffset, options.rows);
    this.params = slab(this.model.params);
    this.grads = slab(this.model.grads);
  }

  get layers(): number {
    return this.#layout.layers.length;
  }

  span(layer: number): [number, number] {
    return this.#layout.span(layer);
  }

  initParams(seed: number): Promise<void> {
    initParams(this.#layout, this.model.params, seed);
    return Promise.resolve();
  }

  load(set: ImageSet, indices: ArrayLike<number>): void {
    const n = this.#rows = indices.length;
    const rows = this.#batchRows.subarray(0, n);
    rows.set(indices);
    this.model.kernels.gather(this.model.input, set, rows);
    for (let r = 0; r < n; r++) this.model.labels[r] = set.labels[rows[r]];
  }

  trainStep(accumulate: boolean, ready?: (layer: number) => void): void {
    const s = this.model.trainStep(this.#rows, accumulate, ready);
    this.#train.loss += s.loss;
    this.#train.correct += s.correct;
    this.#train.rows += this.#rows;
  }

  update(scale: number): void {
    this.model.update(this.#options.lr, this.#options.momentum, scale);
  }

  runningScore(): Score {
    return { ...this.#train };
  }

  addTrainScore(score: Score): void {
    this.#train.loss += score.loss;
    this.#train.correct += score.correct;
    this.#train.rows += score.rows;
  }

  evaluate(): void {
    const s = this.model.evaluate(this.#rows);
    this.#eval.loss += s.loss;
    this.#eval.correct += s.correct;
    this.#eval.rows += this.#rows;
  }

  takeScores(): Promise<{ train: Score; eval: Score }> {
    const scores = { train: this.#train, eval: this.#eval };
    this.#train = zero();
    this.#eval = zero();
    return Promise.resolve(scores);
  }

  synchronize(): Promise<void> {
    return Promise.resolve();
  }

  dispose(): void {
    for (const a of this.#owned.splice(0)) this.#heap.free(a);
  }
}
