// Reduce or scale 16-bit elements (f16, bf16) eight at a time, when every binding's window starts
// on a 16-byte boundary: one invocation per vec4<u32> of each binding, whose low and high halves
// are widened to two vec4<f32>, combined, rounded back and stored as one vec4 (reduce_half.wgsl
// does the rest of a view, word by word). kernels/gpu_kernels.ts fills in the {{…}} parts: the
// bindings, the conversions of the dtype (half_f16.wgsl or half_bf16.wgsl), and a BODY that sets
// `low` and `high` (the even and odd elements of vector k, in f32). Counts and skips are in
// vectors of eight elements.

alias T = vec4<f32>;
alias U = vec4<u32>;
alias B = vec4<bool>;

{{WINDOW}}

override divisor: f32 = 1.0;

{{CONVERSIONS}}

/** The f32 values of the even (low half) elements of the words `w`. */
fn even(w: U) -> T {
  return widen_bits(w & U(0xffffu));
}

/** The f32 values of the odd (high half) elements of the words `w`. */
fn odd(w: U) -> T {
  return widen_bits(w >> U(16u));
}

{{ORDER}}

fn combine(a: T, b: T) -> T {
  return {{COMBINE}};
}

fn finish(x: T) -> T {
  return {{FINISH}};
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let stride = groups.x * 256u;
  for (var k = id.x; k < params.count; k += stride) {
{{BODY}}
    b{{OUT}}[k + skip({{OUT}}u)] = narrow_bits(bitcast<U>(finish(low))) |
      (narrow_bits(bitcast<U>(finish(high))) << U(16u));
  }
}
