/**
 * What kernels compute on: element types, the typed arrays that hold them, and the reduction ops
 * (the ground floor's vocabulary; primitives/types.ts adds the rest of dccl's).
 *
 * Half precision comes in two kinds: `f16` (IEEE binary16) in a `Float16Array`, and `bf16`
 * (bfloat16: the top half of an f32) as raw 16-bit words in a `Uint16Array`, since JavaScript has
 * no bfloat16 array. Reductions on both widen to f32, compute and round back to nearest-even.
 * @module
 */

/** Element types a collective can carry. */
export type Dtype = "f32" | "f64" | "i32" | "f16" | "bf16";
/** All element types, in registry order: new ones go at the end (stamps carry the index). */
export const DTYPES: readonly Dtype[] = ["f32", "f64", "i32", "f16", "bf16"];

/** The ops reduction kernels implement (host SIMD and device alike). */
export type KernelOp = "sum" | "prod" | "max" | "min";
/** All kernel ops. */
export const KERNEL_OPS: readonly KernelOp[] = ["sum", "prod", "max", "min"];

/** A typed array of one of the supported dtypes (`Uint16Array` holds bf16 words). */
export type TypedArray = Float32Array | Float64Array | Int32Array | Float16Array | Uint16Array;

/** Constructor and width of each dtype. */
export const DTYPE_INFO: Readonly<
  Record<Dtype, {
    bytes: number;
    array:
      | Float32ArrayConstructor
      | Float64ArrayConstructor
      | Int32ArrayConstructor
      | Float16ArrayConstructor
      | Uint16ArrayConstructor;
  }>
> = {
  f32: { bytes: 4, array: Float32Array },
  f64: { bytes: 8, array: Float64Array },
  i32: { bytes: 4, array: Int32Array },
  f16: { bytes: 2, array: Float16Array },
  bf16: { bytes: 2, array: Uint16Array },
};

/** The dtype of a typed array. Throws `TypeError` for anything else. */
export function dtypeOf(view: ArrayBufferView): Dtype {
  // Most common first: f32 data, then i32 (layouts, counts).
  if (view instanceof Float32Array) return "f32";
  if (view instanceof Int32Array) return "i32";
  if (view instanceof Float64Array) return "f64";
  if (view instanceof Float16Array) return "f16";
  if (view instanceof Uint16Array) return "bf16";
  throw new TypeError(
    `Unsupported buffer type ${view.constructor.name}: expected Float32Array, Float64Array, ` +
      `Int32Array, Float16Array (f16) or Uint16Array (bf16 words)`,
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

const wordF32 = new Float32Array(1), wordU32 = new Uint32Array(wordF32.buffer);

/** The bf16 word nearest `x` (ties to even, through f32 as the kernels round); NaN stays NaN. */
export function toBf16(x: number): number {
  wordF32[0] = x;
  const bits = wordU32[0];
  // Add 0x7fff and the kept part's low bit, keep the top half; a NaN gets the quiet bit.
  if (x !== x) return (bits >>> 16) | 0x40;
  return (bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16;
}

/** The value of a bf16 word. */
export function fromBf16(word: number): number {
  wordU32[0] = word << 16;
  return wordF32[0];
}

/** `x` as `dtype` stores it: rounded to the type, and a bf16 as its word. */
export function toStored(dtype: Dtype, x: number): number {
  switch (dtype) {
    case "f32":
      return Math.fround(x);
    case "i32":
      return x | 0;
    case "f16":
      return Math.f16round(x);
    case "bf16":
      return toBf16(x);
    default:
      return x;
  }
}

/** The number a stored element of `dtype` stands for (a bf16 word decoded). */
export function fromStored(dtype: Dtype, stored: number): number {
  return dtype === "bf16" ? fromBf16(stored) : stored;
}

/** Writes `values` into `view` from element 0, each rounded to its dtype (bf16 encoded). */
export function setValues(view: TypedArray, values: ArrayLike<number>): void {
  if (!(view instanceof Uint16Array)) return view.set(values);
  for (let i = 0; i < values.length; i++) view[i] = toBf16(values[i]);
}

/** The values of `view` as numbers (bf16 words decoded). */
export function valuesOf(view: TypedArray): number[] {
  const dtype = dtypeOf(view);
  return Array.from(view, (v) => fromStored(dtype, v));
}
