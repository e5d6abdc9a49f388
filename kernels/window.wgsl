// The window a reduce kernel works on, shared by reduce.wgsl and the half kernels: `count` units
// (elements, or vectors of them) and, for binding j + 1, `skip(j)` units between its aligned
// start and the window's first one (binding offsets must be aligned, views need not be).
// kernels/wgsl.ts fills in the bindings and how many vec4s the skips take.

struct Params {
  count: u32,
  skip: array<vec4<u32>, {{SKIP_VECTORS}}>,
}

@group(0) @binding(0) var<uniform> params: Params;
{{BINDINGS}}

fn skip(j: u32) -> u32 {
  return params.skip[j / 4u][j % 4u];
}
