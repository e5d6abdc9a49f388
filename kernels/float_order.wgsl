// max and min of floats as the host kernels order them (IEEE 754-2019 maximum and minimum, as
// WebAssembly's and JavaScript's): NaN when either operand is NaN, and −0 < +0. WGSL's own max
// and min may return either operand for NaN or zeros of both signs, and a compiler may assume
// no NaN in float comparisons, so the order is taken on the bits. The including kernel defines
// T (f32 or vec4<f32>), U (u32 or vec4<u32>) and B (bool or vec4<bool>).

fn is_nan(x: T) -> B {
  return (bitcast<U>(x) & U(0x7fffffffu)) > U(0x7f800000u);
}

// A key whose unsigned order is the floats' order: −∞ < … < −0 < +0 < … < +∞.
fn order_key(x: T) -> U {
  let bits = bitcast<U>(x);
  return bits ^ select(U(0x80000000u), U(0xffffffffu), (bits >> U(31u)) == U(1u));
}

// A NaN operand is passed on as it is: a NaN constant is not a WGSL value (Tint refuses one).
fn nan_of(a: T, b: T) -> T {
  return select(b, a, is_nan(a));
}

fn ordered_max(a: T, b: T) -> T {
  let larger = select(b, a, order_key(a) > order_key(b));
  return select(larger, nan_of(a, b), is_nan(a) | is_nan(b));
}

fn ordered_min(a: T, b: T) -> T {
  let smaller = select(b, a, order_key(a) < order_key(b));
  return select(smaller, nan_of(a, b), is_nan(a) | is_nan(b));
}
