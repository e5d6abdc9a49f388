/**
 * What kernels compute on: element types, the typed arrays that hold them, and the reduction ops
 * (the ground floor's vocabulary; primitives/types.ts adds the rest of dccl's).
 * @module
 */

/** Element types a collective can carry. */
export type Dtype = "f32" | "f64" | "i32";
/** All element types, in registry order. */
export const DTYPES: readonly Dtype[] = ["f32", "f64", "i32"];

/** The ops reduction kernels implement (host SIMD and device alike). */
export type KernelOp = "sum" | "prod" | "max" | "min";
/** All kernel ops. */
export const KERNEL_OPS: readonly KernelOp[] = ["sum", "prod", "max", "min"];

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
