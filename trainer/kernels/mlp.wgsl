// The trainer's device kernels (kernels/mlp_gpu.ts records them). Every call has its own
// uniform block of offsets and sizes, in elements, into whole bound buffers: a model's
// parameters sit at offsets of one slab, so binding windows would need offsets aligned to 256
// bytes. Elementwise kernels run 256 threads per workgroup over a 2-D grid of workgroups
// (nx = x-dimension groups), so any length fits under the 65535-per-dimension limit.

struct Call {
  // gemm: C (m×n) = op(A)·op(B): element (i, kk) of op(A) at a_off + i·a_rs + kk·a_cs, and so on.
  m: u32, n: u32, k: u32, flags: u32,
  a_off: u32, a_rs: u32, a_cs: u32, b_off: u32,
  b_rs: u32, b_cs: u32, c_off: u32, ldc: u32,
  bias_off: u32, nx: u32, _pad0: u32, _pad1: u32,
  // sgd: learning rate, momentum, gradient scale; softmax_xent: gradient scale.
  lr: f32, mu: f32, scale: f32, _pad2: f32,
}

const RELU: u32 = 1u;
const ACCUMULATE: u32 = 2u;
const BIAS: u32 = 4u;

@group(0) @binding(0) var<uniform> call: Call;

// ---- GEMM: 64 × 64 tiles of C, 16 × 16 threads of 4 × 4 outputs, k in steps of 16 ----

@group(0) @binding(1) var<storage, read> ga: array<f32>;
@group(0) @binding(2) var<storage, read> gb: array<f32>;
@group(0) @binding(3) var<storage, read_write> gc: array<f32>;
@group(0) @binding(4) var<storage, read> gbias: array<f32>;

var<workgroup> tile_a: array<array<f32, 64>, 16>; // [kk][i]
var<workgroup> tile_b: array<array<f32, 64>, 16>; // [kk][j]

@compute @workgroup_size(16, 16)
fn gemm(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let i0 = wg.y * 64u;
  let j0 = wg.x * 64u;
  let t = lid.y * 16u + lid.x;
  var acc: array<array<f32, 4>, 4>;
  for (var k0 = 0u; k0 < call.k; k0 += 16u) {
    for (var q = 0u; q < 4u; q++) {
      let e = t + q * 256u;
      // A: 64 rows × 16 k; B: 16 k × 64 columns (consecutive threads take consecutive columns).
      let ai = e / 16u;
      let ak = e % 16u;
      var av = 0.0;
      if (i0 + ai < call.m && k0 + ak < call.k) {
        av = ga[call.a_off + (i0 + ai) * call.a_rs + (k0 + ak) * call.a_cs];
      }
      tile_a[ak][ai] = av;
      let bk = e / 64u;
      let bj = e % 64u;
      var bv = 0.0;
      if (k0 + bk < call.k && j0 + bj < call.n) {
        bv = gb[call.b_off + (k0 + bk) * call.b_rs + (j0 + bj) * call.b_cs];
      }
      tile_b[bk][bj] = bv;
    }
    workgroupBarrier();
    for (var kk = 0u; kk < 16u; kk++) {
      var a: array<f32, 4>;
      var b: array<f32, 4>;
      for (var r = 0u; r < 4u; r++) {
        a[r] = tile_a[kk][lid.y * 4u + r];
        b[r] = tile_b[kk][lid.x + 16u * r];
      }
      for (var r = 0u; r < 4u; r++) {
        for (var c = 0u; c < 4u; c++) {
          acc[r][c] = fma(a[r], b[c], acc[r][c]);
        }
      }
    }
    workgroupBarrier();
  }
  for (var r = 0u; r < 4u; r++) {
    let i = i0 + lid.y * 4u + r;
    for (var c = 0u; c < 4u; c++) {
      let j = j0 + lid.x + 16u * c;
      if (i >= call.m || j >= call.n) {
        continue;
      }
      let at = call.c_off + i * call.ldc + j;
      var v = acc[r][c];
      if ((call.flags & BIAS) != 0u) {
        v += gbias[call.bias_off + j];
      }
      if ((call.flags & ACCUMULATE) != 0u) {
        v += gc[at];
      }
      if ((call.flags & RELU) != 0u) {
        v = max(v, 0.0);
      }
      gc[at] = v;
    }
  }
}

// ---- Elementwise: `x` is written, `y` and `z` are read (or written, for momentum) ----

@group(0) @binding(5) var<storage, read_write> x: array<f32>;
@group(0) @binding(6) var<storage, read> y: array<f32>;
@group(0) @binding(7) var<storage, read_write> z: array<f32>;

fn element(wg: vec3u, lid: vec3u) -> u32 {
  return (wg.y * call.nx + wg.x) * 256u + lid.x;
}

// x[a_off + i] = 0 where y[b_off + i] ≤ 0: ReLU's backward (y: the layer's output).
@compute @workgroup_size(256)
fn relu_backward(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let i = element(wg, lid);
  if (i < call.n && !(y[call.b_off + i] > 0.0)) {
    x[call.a_off + i] = 0.0;
  }
}

// x = σ(x), in place.
@compute @workgroup_size(256)
fn sigmoid_forward(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let i = element(wg, lid);
  if (i < call.n) {
    x[call.a_off + i] = 1.0 / (1.0 + exp(-x[call.a_off + i]));
  }
}

// x *= y·(1 − y), y being σ's output.
@compute @workgroup_size(256)
fn sigmoid_backward(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let i = element(wg, lid);
  if (i < call.n) {
    let s = y[call.b_off + i];
    x[call.a_off + i] *= s * (1.0 - s);
  }
}

// x[a_off + j] (+)= Σ over m rows of y[b_off + r·n + j]: a bias gradient.
@compute @workgroup_size(256)
fn colsum(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let j = element(wg, lid);
  if (j >= call.n) {
    return;
  }
  var s = 0.0;
  if ((call.flags & ACCUMULATE) != 0u) {
    s = x[call.a_off + j];
  }
  for (var r = 0u; r < call.m; r++) {
    s += y[call.b_off + r * call.n + j];
  }
  x[call.a_off + j] = s;
}

// PyTorch's SGD: x parameters, y gradients (times scale), z momentum (with mu ≠ 0).
@compute @workgroup_size(256)
fn sgd(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let i = element(wg, lid);
  if (i >= call.n) {
    return;
  }
  var step = y[i] * call.scale;
  if (call.mu != 0.0) {
    step = fma(call.mu, z[i], step);
    z[i] = step;
  }
  x[i] -= call.lr * step;
}

// ---- Softmax cross-entropy over m rows of n classes ----
// y[b_off…]: logits; x[a_off…]: (probabilities − one-hot)·scale; z[c_off + row]: the row's
// label (as a float), z[c_off + m + row]: its loss, z[c_off + 2m + row]: 1 where the largest
// logit (the first, on ties) is the label's.
@compute @workgroup_size(256)
fn softmax_xent(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let row = element(wg, lid);
  if (row >= call.m) {
    return;
  }
  let logits = call.b_off + row * call.n;
  let grads = call.a_off + row * call.n;
  let label = u32(z[call.c_off + row]);
  var top = y[logits];
  var arg = 0u;
  for (var c = 1u; c < call.n; c++) {
    if (y[logits + c] > top) {
      top = y[logits + c];
      arg = c;
    }
  }
  var sum = 0.0;
  for (var c = 0u; c < call.n; c++) {
    sum += exp(y[logits + c] - top);
  }
  z[call.c_off + call.m + row] = log(sum) - (y[logits + label] - top);
  z[call.c_off + 2u * call.m + row] = select(0.0, 1.0, arg == label);
  for (var c = 0u; c < call.n; c++) {
    let p = exp(y[logits + c] - top) / sum;
    x[grads + c] = (p - select(0.0, 1.0, c == label)) * call.scale;
  }
}

// x[a_off] += Σ y[b_off + r], x[a_off + 1] += Σ y[b_off + m + r] over m rows: one workgroup adds
// a batch's losses and hits (softmax_xent's) to a running score.
var<workgroup> partial: array<vec2f, 256>;

@compute @workgroup_size(256)
fn score(@builtin(local_invocation_id) lid: vec3u) {
  var s = vec2f(0.0);
  for (var r = lid.x; r < call.m; r += 256u) {
    s += vec2f(y[call.b_off + r], y[call.b_off + call.m + r]);
  }
  partial[lid.x] = s;
  workgroupBarrier();
  for (var half = 128u; half > 0u; half >>= 1u) {
    if (lid.x < half) {
      partial[lid.x] += partial[lid.x + half];
    }
    workgroupBarrier();
  }
  if (lid.x == 0u) {
    x[call.a_off] += partial[0].x;
    x[call.a_off + 1u] += partial[0].y;
  }
}

// ---- The device's peak: each invocation runs call.k rounds of 8 independent vec4 FMAs on
// registers alone (nothing loaded), and writes one lane so no compiler drops the work. ----

@compute @workgroup_size(256)
fn peak(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let i = element(wg, lid);
  let m = vec4f(0.999, 0.998, 0.997, 0.996);
  let c = vec4f(0.001);
  var a0 = vec4f(f32(i)); var a1 = a0 + 1.0; var a2 = a0 + 2.0; var a3 = a0 + 3.0;
  var a4 = a0 + 4.0; var a5 = a0 + 5.0; var a6 = a0 + 6.0; var a7 = a0 + 7.0;
  for (var r = 0u; r < call.k; r++) {
    a0 = fma(a0, m, c); a1 = fma(a1, m, c); a2 = fma(a2, m, c); a3 = fma(a3, m, c);
    a4 = fma(a4, m, c); a5 = fma(a5, m, c); a6 = fma(a6, m, c); a7 = fma(a7, m, c);
  }
  if (i < call.n) {
    x[call.a_off + i] = (a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7).x;
  }
}
