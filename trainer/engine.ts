/**
 * What a synchronisation strategy drives, whatever computes: an {@linkcode Engine} (the CPU model
 * or the GPU model) trains on batches and exposes its parameter and gradient slabs as
 * {@linkcode SyncedSlab}s, whose `comm` side is the buffer collectives use, in the memory kind
 * the run asked for (`--memory`).
 * @module
 */

import { type CommBuffer, HostBuffer } from "../core.ts";
import type { ImageSet } from "./mnist.ts";

/**
 * A slab the model computes on (`local`) and the buffer collectives use for it (`comm`): the
 * same buffer when the model's memory is the asked kind (a rank heap's `shared` slab for the CPU,
 * `gpu` for the GPU), else a buffer of that kind that {@linkcode toComm} and {@linkcode fromComm}
 * copy to and from, as a program must when its tensors live elsewhere (pageable memory, say).
 */
export class SyncedSlab {
  /** The slab where the model keeps it. */
  readonly local: CommBuffer;
  /** The slab collectives use (`local` itself, or a buffer of the asked kind). */
  readonly comm: CommBuffer;

  /** The slab `local`, synchronised through `comm`. */
  constructor(local: CommBuffer, comm: CommBuffer) {
    this.local = local;
    this.comm = comm;
  }

  /** Whether collectives run on the model's own buffer (no copies). */
  get direct(): boolean {
    return this.local === this.comm;
  }

  /** Copies elements `[start, end)` from the model's buffer to the collectives' one. */
  async toComm(start?: number, end?: number): Promise<void> {
    start ??= 0;
    end ??= this.local.length;
    if (!this.direct) await copy(this.local.subarray(start, end), this.comm.subarray(start, end));
  }

  /** Copies elements `[start, end)` from the collectives' buffer back to the model's. */
  async fromComm(start?: number, end?: number): Promise<void> {
    start ??= 0;
    end ??= this.local.length;
    if (!this.direct) await copy(this.comm.subarray(start, end), this.local.subarray(start, end));
  }
}

/** Copies one buffer into another of the same length, whatever their kinds. */
async function copy(from: CommBuffer, to: CommBuffer): Promise<void> {
  if (to instanceof HostBuffer) return from.read(to.view);
  if (from instanceof HostBuffer) return to.write(from.view);
  const bounce = new Float32Array(from.length);
  await from.read(bounce);
  await to.write(bounce);
}

/** Running totals of a training or evaluation pass. */
export interface Score {
  /** Summed cross-entropy. */
  loss: number;
  /** Rows classified right. */
  correct: number;
  /** Rows seen. */
  rows: number;
}

/** One rank's model, as strategies see it. */
export interface Engine {
  /** `cpu` or `gpu`. */
  readonly device: "cpu" | "gpu";
  /** Which kernels compute (`relaxed`, `plain`, `js`, `wgsl`). */
  readonly kernels: string;
  /** The parameters. */
  readonly params: SyncedSlab;
  /** The gradients. */
  readonly grads: SyncedSlab;
  /** Elements `[start, end)` of the slabs that layer `l` occupies. */
  span(layer: number): [number, number];
  /** Number of layers. */
  readonly layers: number;
  /** Fills the parameters like `torch.nn.Linear` from `seed`. */
  initParams(seed: number): Promise<void>;
  /** Takes rows `indices` of `set` as the next batch. */
  load(set: ImageSet, indices: ArrayLike<number>): void;
  /**
   * Forward and backward over the loaded batch: gradients of its mean loss go into the gradient
   * slab (added when `accumulate`), and the loss and accuracy into the training score.
   * `ready(l)` runs once layer `l`'s gradients are complete, last layer first.
   */
  trainStep(accumulate: boolean, ready?: (layer: number) => void): void;
  /** One SGD step with the gradients times `scale`. */
  update(scale: number): void;
  /** Adds the loaded batch's loss and accuracy to the evaluation score. */
  evaluate(): void;
  /** The optimizer's state beside the parameters: the momentum buffer (empty without momentum). */
  readonly optimizerState: CommBuffer;
  /**
   * The training score since the last `takeScores`, where reading it costs nothing (the CPU
   * engine; the GPU engine adds its scores up on the device and reads them once per epoch).
   */
  runningScore?(): Score;
  /** Adds `score` to the training score (a resumed epoch's score before the checkpoint). */
  addTrainScore?(score: Score): void;
  /** The training and evaluation scores since the last call, then resets them. */
  takeScores(): Promise<{ train: Score; eval: Score }>;
  /** Waits for the work recorded so far (a no-op on the CPU). */
  synchronize(): Promise<void>;
  /** Releases buffers. */
  dispose(): void;
}
