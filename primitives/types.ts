/**
 * Shared vocabulary: element types (kernels/elements.ts), reduce ops, memory kinds, the sides of
 * memory and what algorithms need.
 * @module
 */

export {
  type Dtype,
  DTYPE_INFO,
  dtypeOf,
  DTYPES,
  KERNEL_OPS,
  type KernelOp,
  makeView,
  type TypedArray,
} from "../kernels/elements.ts";

/** Reduction operators. `avg` is `sum` followed by a division by the communicator size. */
export type ReduceOp = "sum" | "prod" | "max" | "min" | "avg";
/** All reduce ops, in registry order. */
export const REDUCE_OPS: readonly ReduceOp[] = ["sum", "prod", "max", "min", "avg"];

/** Where a buffer's bytes live (docs/memory.md). */
export type MemoryKind = "host" | "shared" | "gpu" | "managed";
/** All memory kinds, in registry order. */
export const MEMORY_KINDS: readonly MemoryKind[] = ["host", "shared", "gpu", "managed"];

/** Memory kinds that live on a device (the rest are host memory). */
export const DEVICE_MEMORY: readonly MemoryKind[] = ["gpu", "managed"];

/** Where a buffer is used: on the host (a view) or on the device (a device buffer). */
export type Side = "host" | "device";

/**
 * What an algorithm needs from a transport (and a transport offers): point-to-point `messages` or
 * `shared` access to every peer's heap (host buffers), ranks that share one `device` (device
 * buffers), or `staging` device buffers through the host.
 */
export type AlgorithmNeed = "messages" | "shared" | "device" | "staging" | "hierarchy";

/** Largest buffer a collective accepts: 2^28 floats (1 GiB). */
export const MAX_BYTES = 2 ** 30;

/** Milliseconds an operation may wait without progress before it fails, unless told otherwise. */
export const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * The settled promise of work that finished within the call, returned instead of a fresh one (a
 * small call then allocates none) and recognised by callers, which can skip waiting on it.
 */
export const DONE: Promise<void> = Promise.resolve();

/** What moving and reducing bytes costs on the links between a group's hosts (each algorithm states its cost: collectives/algorithm.ts). */
export interface LinkCosts {
  /** α: µs from a send to its arrival for a message of a few bytes. */
  latencyUs: number;
  /** β: µs per byte on a link (its inverse bandwidth). */
  usPerByte: number;
  /** γ: µs per byte a rank takes to reduce one buffer into another. */
  reduceUsPerByte: number;
}
