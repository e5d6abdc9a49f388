// Reduce, scale or copy 16-bit elements (f16, bf16) on the device, two to a u32 word: for every
// element i of a window, out[i] = finish(in_0[i] op in_1[i] op …) (or out[i] op in_0[i] op …
// when accumulating), each element widened to f32 and rounded back to nearest even by integer
// operations, as the host kernels do (no shader-f16 needed); a copy moves the bits. One
// invocation per word of the one output, which keeps the halves outside the window as they
// were, so no two invocations write a word. kernels/gpu_kernels.ts fills in the {{…}} parts: the
// bindings, the conversions of the dtype (half_f16.wgsl or half_bf16.wgsl), and a BODY that sets `element` (the 16 bits) for
// element i. Counts and skips are in elements.

{{WINDOW}}

override divisor: f32 = 1.0;

{{CONVERSIONS}}

/** The f32 value of half `part` (0: low, 1: high) of `word`. */
fn widen(word: u32, part: u32) -> f32 {
  return widen_bits((word >> (16u * part)) & 0xffffu);
}

/** The 16-bit element nearest `x` (ties to even). */
fn narrow(x: f32) -> u32 {
  return narrow_bits(bitcast<u32>(x));
}

alias T = f32;
alias U = u32;
alias B = bool;

{{ORDER}}

fn combine(a: f32, b: f32) -> f32 {
  return {{COMBINE}};
}

fn finish(x: f32) -> f32 {
  return {{FINISH}};
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let stride = groups.x * 256u;
  let first = skip({{OUT}}u);
  let words = (first + params.count + 1u) / 2u - first / 2u;
  for (var k = id.x; k < words; k += stride) {
    let word = first / 2u + k;
    var result = b{{OUT}}[word];
    for (var part = 0u; part < 2u; part++) {
      let at = 2u * word + part;
      if (at < first || at - first >= params.count) {
        continue;
      }
      let i = at - first;
{{BODY}}
      let shift = 16u * part;
      result = (result & ~(0xffffu << shift)) | (element << shift);
    }
    b{{OUT}}[word] = result;
  }
}
