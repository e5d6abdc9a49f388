// f16: the f32 of the 16 bits `h`, and the 16 bits nearest the f32 of bits `f` (ties to
// even), in integer operations: exact on devices that flush subnormals, and the same bits as the
// host kernels (kernels/half_wat.ts). The half kernels include this file for f16 elements, with
// T, U and B defined as f32, u32 and bool or as their vec4s; every case is computed and the right
// one selected, so vector lanes never diverge.

fn widen_bits(h: U) -> T {
  let sign = (h & U(0x8000u)) << U(16u);
  let exponent = (h >> U(10u)) & U(0x1fu);
  let mantissa = h & U(0x3ffu);
  let subnormal = T(mantissa) * 5.9604644775390625e-8; // 2^-24, the subnormal step
  let normal = bitcast<T>(sign | ((exponent + U(112u)) << U(23u)) | (mantissa << U(13u)));
  let special = bitcast<T>(sign | U(0x7f800000u) | (mantissa << U(13u)));
  let finite = select(normal, select(subnormal, -subnormal, sign != U(0u)), exponent == U(0u));
  return select(finite, special, exponent == U(31u));
}

fn narrow_bits(f: U) -> U {
  let t = f & U(0x7fffffffu);
  let sign = (f >> U(16u)) & U(0x8000u);
  // Overflow to infinity; NaN stays NaN.
  let large = select(U(0x7c00u), U(0x7e00u), t > U(0x7f800000u));
  // Normal: re-bias, round by 0xfff plus the kept part's low bit.
  let normal = (t + U(0xc8000fffu) + ((t >> U(13u)) & U(1u))) >> U(13u);
  // Subnormal: the significand shifted to the 2^-24 step, rounded to nearest even (the shift is
  // 14 to 24 where this case is selected; other lanes' shifts wrap harmlessly).
  let exponent = t >> U(23u);
  let m = (t & U(0x7fffffu)) | U(0x800000u);
  let s = U(126u) - exponent;
  let q = m >> s;
  let rest = m & ((U(1u) << s) - U(1u));
  let tie = U(1u) << (s - U(1u));
  let up = (rest > tie) | ((rest == tie) & ((q & U(1u)) == U(1u)));
  let subnormal = select(q + select(U(0u), U(1u), up), U(0u), exponent < U(102u));
  let magnitude = select(select(subnormal, normal, t >= U(0x38800000u)), large, t >= U(0x47800000u));
  return sign | magnitude;
}

/** `x` rounded to the nearest half and widened back: each step of a reduction rounds, as the host's. */
fn rounded(x: T) -> T {
  return widen_bits(narrow_bits(bitcast<U>(x)));
}
