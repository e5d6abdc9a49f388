// f16: the f32 of the 16 bits `h`, and the 16 bits nearest the f32 of bits `f` (ties to
// even), in integer operations: exact on devices that flush subnormals, and the same bits as the
// host kernels (kernels/half_wat.ts). reduce_half.wgsl includes this file for f16 elements.

fn widen_bits(h: u32) -> f32 {
  let sign = (h & 0x8000u) << 16u;
  let exponent = (h >> 10u) & 0x1fu;
  let mantissa = h & 0x3ffu;
  if (exponent == 0u) {
    let v = f32(mantissa) * 5.9604644775390625e-8; // 2^-24, the subnormal step
    return select(v, -v, sign != 0u);
  }
  if (exponent == 31u) {
    return bitcast<f32>(sign | 0x7f800000u | (mantissa << 13u));
  }
  return bitcast<f32>(sign | ((exponent + 112u) << 23u) | (mantissa << 13u));
}

fn narrow_bits(f: u32) -> u32 {
  let t = f & 0x7fffffffu;
  let sign = (f >> 16u) & 0x8000u;
  if (t >= 0x47800000u) { // overflow to infinity; NaN stays NaN
    return sign | select(0x7c00u, 0x7e00u, t > 0x7f800000u);
  }
  if (t >= 0x38800000u) { // normal: re-bias, round by 0xfff plus the kept part's low bit
    return sign | ((t + 0xc8000fffu + ((t >> 13u) & 1u)) >> 13u);
  }
  // Subnormal: the significand shifted to the 2^-24 step, rounded to nearest even.
  let exponent = t >> 23u;
  if (exponent < 102u) {
    return sign;
  }
  let m = (t & 0x7fffffu) | 0x800000u;
  let s = 126u - exponent;
  let q = m >> s;
  let rest = m & ((1u << s) - 1u);
  let tie = 1u << (s - 1u);
  return sign | (q + select(0u, 1u, rest > tie || (rest == tie && (q & 1u) == 1u)));
}
