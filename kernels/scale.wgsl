// Divides every element of a window by `divisor` in place: the second half of `avg` (after a
// sum), and, with divisor 1, a device-side write of every element (a managed buffer's touch).
// Integer division truncates toward zero, as in C and NCCL. kernels/gpu_kernels.ts fills in
// {{TYPE}} (a scalar, or vec4 of it) and {{DIVIDE}} (the quotient of `x` by `divisor`).

alias T = {{TYPE}};

struct Params {
  count: u32,
  skip: u32,
}

override divisor: f32;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> data: array<T>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let stride = groups.x * 256u;
  for (var i = id.x; i < params.count; i += stride) {
    let j = i + params.skip;
    let x = data[j];
    data[j] = {{DIVIDE}};
  }
}
