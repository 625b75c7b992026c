// lib/gemv-fusion: what the GEMV kernels (gemv*.wgsl) fuse around their dot products, so that a decode layer
// runs fewer dispatches (a dispatch has a fixed cost, large on software adapters):
//   NORM (prologue): x is the residual stream, RMS-normalized on the fly: x' = x * norm_w * s per vector, with
//     s = 1 / sqrt(mean(x^2) + eps). norm_w scales every x load (x_load), and s, one number per vector, scales the
//     row sums at the store (W x' = s * W (x * norm_w)), so the normalized rows are never written.
//   GATED (epilogue): the weight is [gate; up] (2F, K) in one part, the up rows p.up_row rows after the gate rows;
//     output row r is act(gate_r . x') * (up_r . x'), act = SiLU (GATED 1: SwiGLU) or tanh GELU (GATED 2: GeGLU).
// Joined after lib/matmul-io.wgsl. The joining kernel declares `override NORM: bool` and `override GATED: u32`.

@group(0) @binding(5) var<storage, read> norm_w: array<vec4<f32>>;  // (K) f32: the RMSNorm weight (NORM only)

// vec4 e of the vector whose vec4 0 is at x[base], scaled by the norm weight under NORM.
fn x_load(base: u32, e: u32) -> vec4<f32> {
  let v = x[base + e];
  if (NORM) { return v * norm_w[e]; }
  return v;
}

// 1 / sqrt(mean(x^2) + eps) of the vector whose vec4 0 is at x[base], summed by the calling invocation alone.
fn rms_scale(base: u32) -> f32 {
  var ss = vec4<f32>(0.0);
  for (var e = 0u; e < p.k / 4u; e++) {
    let v = x[base + e];
    ss += v * v;
  }
  return inverseSqrt((ss.x + ss.y + ss.z + ss.w) / f32(p.k) + p.eps);
}

// act(g) * u for GATED 1 (SiLU) and 2 (tanh GELU, tanh from exp of a clamped argument as in gelu-tanh.wgsl).
fn gate_act(g: f32, u: f32) -> f32 {
  if (GATED == 1u) { return g / (1.0 + exp(-g)) * u; }
  let z = clamp(0.7978845608028654 * (g + 0.044715 * g * g * g), -15.0, 15.0);
  let e = exp(2.0 * z);
  return 0.5 * g * (1.0 + (e - 1.0) / (e + 1.0)) * u;
}
