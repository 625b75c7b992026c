// gelu-erf: y[t, i] = gelu(x[t * stride + i])  (GELU with erf: lib/gelu-erf.wgsl, joined by the wrapper)
//   x: rows of F at a stride ≥ F (the up projection's output, or a column range of a wider one)    y: (T, F) f32
// The standalone form, for up projections that cannot fuse it: the GEMM epilogue (gemm*.wgsl ACT 1) applies the same
// function after the bias, which is what the encoder uses; this kernel serves other matmuls (GEMV, a split weight)
// and tests the function itself. One invocation per element, grid2d over (T * F) / WG_SIZE.

override WG_SIZE: u32 = 256u;

struct Params { t: u32, f: u32, stride: u32, wg_x: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let idx = (wid.y * p.wg_x + wid.x) * WG_SIZE + lid;
  if (idx >= p.t * p.f) { return; }
  let t = idx / p.f;
  let i = idx - t * p.f;
  y[idx] = gelu_erf(x[t * p.stride + i]);
}
