/**
 * Gradient compression as PyTorch DDP's communication hooks (`fp16_compress_hook`,
 * `bf16_compress_hook`): each gradient bucket is rounded to half precision, allreduced as such
 * (half the bytes on the wire; every step of the sum widens to f32 and rounds back), and widened
 * back into the f32 gradients. With error feedback (EF-SGD), each rank keeps what rounding took
 * off its gradients and adds it to its next ones, so no part of a gradient is lost for good.
 * @module
 */

import type { Communicator, HostBuffer } from "../../core.ts";
import { fromHalf, toHalf } from "../../kernels/mod.ts";

/** The element types gradients can travel in. */
export const GRAD_DTYPES = ["f32", "f16", "bf16"] as const;
/** A gradient element type. */
export type GradDtype = typeof GRAD_DTYPES[number];

/** A half-precision allreduce of gradient buckets, with its own half-precision slab. */
export class HalfPrecisionHook {
  /** Each rank's rounding error so far (error feedback), else undefined; checkpointed. */
  readonly residual: Float32Array | undefined;
  readonly #comm: Communicator;
  readonly #half: HostBuffer<Float16Array | Uint16Array>;
  readonly #residual: HostBuffer<Float32Array> | undefined;

  /** A hook for `count` gradients travelling as `dtype`, in `memory` (the gradients' kind). */
  constructor(
    comm: Communicator,
    dtype: "f16" | "bf16",
    count: number,
    memory: "host" | "shared",
    errorFeedback: boolean,
  ) {
    this.#comm = comm;
    this.#half = comm.alloc(count, { dtype, memory }) as HostBuffer<Float16Array | Uint16Array>;
    // In the rank's heap, where the conversion kernels reach it.
    this.#residual = errorFeedback
      ? comm.alloc(count, { memory: "shared" }) as HostBuffer<Float32Array>
      : undefined;
    this.residual = this.#residual?.view;
  }

  /** The sum over ranks of gradients `[start, end)` of `grads`, in place, through half precision. */
  async allreduce(grads: HostBuffer<Float32Array>, start: number, end: number): Promise<void> {
    const g = grads.view.subarray(start, end), half = this.#half.subarray(start, end);
    toHalf(half.view, g, this.residual?.subarray(start, end));
    await this.#comm.allreduce(half, { op: "sum" });
    fromHalf(g, half.view);
  }

  /** Releases the half-precision slab and the residual. */
  dispose(): void {
    this.#comm.free(this.#half);
    if (this.#residual) this.#comm.free(this.#residual);
  }
}
