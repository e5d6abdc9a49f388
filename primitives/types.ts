/**
 * Shared vocabulary: element types, reduce ops, memory kinds and transport names.
 * @module
 */

/** Element types a collective can carry. */
export type Dtype = "f32" | "f64" | "i32";
/** All element types, in registry order. */
export const DTYPES: readonly Dtype[] = ["f32", "f64", "i32"];

/** Reduction operators. `avg` is `sum` followed by a division by the communicator size. */
export type ReduceOp = "sum" | "prod" | "max" | "min" | "avg";
/** All reduce ops, in registry order. */
export const REDUCE_OPS: readonly ReduceOp[] = ["sum", "prod", "max", "min", "avg"];

/** The ops reduction kernels implement (host SIMD and device alike): every op but `avg`. */
export type KernelOp = Exclude<ReduceOp, "avg">;
/** All kernel ops. */
export const KERNEL_OPS: readonly KernelOp[] = ["sum", "prod", "max", "min"];

/** Where a buffer's bytes live (DESIGN.md: memory kinds). */
export type MemoryKind = "host" | "shared" | "gpu" | "managed";
/** All memory kinds, in registry order. */
export const MEMORY_KINDS: readonly MemoryKind[] = ["host", "shared", "gpu", "managed"];

/** Where a buffer is used: on the host (a view) or on the device (a device buffer). */
export type Side = "host" | "device";

/** How bytes move between ranks (DESIGN.md: transports). */
export type TransportName = "shm" | "worker" | "ws" | "tcp" | "gpu";

/** A typed array of one of the supported dtypes. */
export type TypedArray = Float32Array | Float64Array | Int32Array;

/** Constructor and width of each dtype. */
export const DTYPE_INFO: Readonly<
  Record<Dtype, {
    bytes: number;
    array: Float32ArrayConstructor | Float64ArrayConstructor | Int32ArrayConstructor;
  }>
> = {
  f32: { bytes: 4, array: Float32Array },
  f64: { bytes: 8, array: Float64Array },
  i32: { bytes: 4, array: Int32Array },
};

/** The dtype of a typed array. Throws `TypeError` for anything else. */
export function dtypeOf(view: ArrayBufferView): Dtype {
  if (view instanceof Float32Array) return "f32";
  if (view instanceof Float64Array) return "f64";
  if (view instanceof Int32Array) return "i32";
  throw new TypeError(
    `Unsupported buffer type ${view.constructor.name}: expected Float32Array, Float64Array or Int32Array`,
  );
}

/** A view of `count` elements of `dtype` over `buffer` starting at `byteOffset`. */
export function makeView(
  dtype: Dtype,
  buffer: ArrayBufferLike,
  byteOffset: number,
  count: number,
): TypedArray {
  return new DTYPE_INFO[dtype].array(buffer as ArrayBuffer, byteOffset, count);
}

/** Largest buffer a collective accepts: 2^28 floats (1 GiB). */
export const MAX_BYTES = 2 ** 30;

/** Milliseconds an operation may wait without progress before it fails, unless told otherwise. */
export const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * The settled promise of work that finished within the call, returned instead of a fresh one (a
 * small call then allocates none) and recognised by callers, which can skip waiting on it.
 */
export const DONE: Promise<void> = Promise.resolve();
