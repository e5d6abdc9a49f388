// Reduce on the device: for every element i of a window, out_m[i] = in_0[i] op in_1[i] op …
// (or out_m[i] op in_0[i] op … when accumulating), written to every output m. One invocation
// per element (grid-stride), so an output that is also an input (in place) is read before it is
// written. kernels/gpu_kernels.ts fills in the {{…}} parts: the type (a scalar, or vec4 of it
// when every window allows 16-byte accesses), the op, and the bindings and body for its numbers
// of outputs and inputs. Counts and skips are in elements of T.

alias T = {{TYPE}};
alias U = {{BITS}};
alias B = {{BOOLS}};

{{WINDOW}}

{{ORDER}}

fn combine(a: T, b: T) -> T {
  return {{COMBINE}};
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let stride = groups.x * 256u;
  for (var i = id.x; i < params.count; i += stride) {
{{BODY}}
  }
}
