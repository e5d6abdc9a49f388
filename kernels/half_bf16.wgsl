// bf16: the f32 of the 16 bits `h`, and the 16 bits nearest the f32 of bits `f` (ties to
// even), in integer operations: exact on devices that flush subnormals, and the same bits as the
// host kernels (kernels/half_wat.ts). The half kernels include this file for bf16 elements, with
// T, U and B defined as f32, u32 and bool or as their vec4s.

fn widen_bits(h: U) -> T {
  return bitcast<T>(h << U(16u));
}

fn narrow_bits(f: U) -> U {
  let nan = (f & U(0x7fffffffu)) > U(0x7f800000u);
  return select((f + U(0x7fffu) + ((f >> U(16u)) & U(1u))) >> U(16u), (f >> U(16u)) | U(0x40u), nan);
}

/** `x` rounded to the nearest half and widened back: each step of a reduction rounds, as the host's. */
fn rounded(x: T) -> T {
  return widen_bits(narrow_bits(bitcast<U>(x)));
}
