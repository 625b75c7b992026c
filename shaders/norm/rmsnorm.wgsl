// rmsnorm: y[t, c] = x[t, c] / sqrt(mean_c(x[t, :]^2) + eps) * w[c]
// The prefill path's norm before a GEMM and the final norm of more logits rows than the GEMV takes (decode steps
// fuse the norm into the GEMV's prologue instead: lib/gemv-fusion.wgsl).
//   params: rows T, cols C, eps
//   x: (T, C) f32    w: (C) f32    y: (T, C) f32
// One workgroup owns one row; invocations stride over C, then reduce the sum of squares.
// Joined with lib/reduce.wgsl.

override WG_SIZE: u32 = 64u;
// 1: y[t, c] += the normed value (Gemma's post-norms: the stream takes the normed sublayer output).
override ACCUMULATE: u32 = 0u;

struct Params { rows: u32, cols: u32, eps: f32, _pad: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = wid.y * nwg.x + wid.x;
  if (row >= p.rows) { return; }  // uniform per workgroup
  let base = row * p.cols;
  var ss = 0.0;
  for (var c = lid; c < p.cols; c += WG_SIZE) {
    let v = x[base + c];
    ss += v * v;
  }
  let total = wg_sum(ss, lid);
  let scale = inverseSqrt(total / f32(p.cols) + p.eps);
  for (var c = lid; c < p.cols; c += WG_SIZE) {
    let v = x[base + c] * scale * w[c];
    if (ACCUMULATE == 1u) { y[base + c] += v; } else { y[base + c] = v; }
  }
}
