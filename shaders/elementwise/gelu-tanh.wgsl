// gelu-tanh: y[t, i] = gelu(x[t, i]) * u[t, i]   (GeGLU, the gated activation of gelu_pytorch_tanh models), with
// the tanh approximation
//   gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
//   x, u: rows t at offset t * stride (+ u_offset for u), as in swiglu; y: (T, F) f32.
// tanh is computed from exp of a clamped argument: some tanh() implementations return NaN for |z| > ~44.

override WG_SIZE: u32 = 256u;

struct Params { t: u32, f: u32, x_stride: u32, u_stride: u32, u_offset: u32, wg_x: u32, _pad0: u32, _pad1: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> u: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

fn tanh_safe(z: f32) -> f32 {
  let c = clamp(z, -15.0, 15.0);
  let e = exp(2.0 * c);
  return (e - 1.0) / (e + 1.0);
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let idx = (wid.y * p.wg_x + wid.x) * WG_SIZE + lid;
  if (idx >= p.t * p.f) { return; }
  let t = idx / p.f;
  let i = idx - t * p.f;
  let v = x[t * p.x_stride + i];
  let gelu = 0.5 * v * (1.0 + tanh_safe(0.7978845608028654 * (v + 0.044715 * v * v * v)));
  y[idx] = gelu * u[t * p.u_stride + p.u_offset + i];
}
