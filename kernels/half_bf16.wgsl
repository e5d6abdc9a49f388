// bf16: the f32 of the 16 bits `h`, and the 16 bits nearest the f32 of bits `f` (ties to
// even), in integer operations: exact on devices that flush subnormals, and the same bits as the
// host kernels (kernels/half_wat.ts). reduce_half.wgsl includes this file for bf16 elements.

fn widen_bits(h: u32) -> f32 {
  return bitcast<f32>(h << 16u);
}

fn narrow_bits(f: u32) -> u32 {
  if ((f & 0x7fffffffu) > 0x7f800000u) {
    return (f >> 16u) | 0x40u;
  }
  return (f + 0x7fffu + ((f >> 16u) & 1u)) >> 16u;
}
