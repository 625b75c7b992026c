// sigmoid-gate: y[t, i] = sigmoid(x[t, i]) * u[t, i]   (Qwen3.5's attention output gate: the attention output times
// sigmoid of the gate half of the q projection)
//   x, u: rows t at offset t * stride (+ u_offset for u), as in swiglu; y: (T, F) f32.
// sigmoid from exp of a clamped argument, so a gate of ±1e5 gives 1 or about 1e-35, never NaN.

override WG_SIZE: u32 = 256u;

struct Params { t: u32, f: u32, x_stride: u32, u_stride: u32, u_offset: u32, wg_x: u32, _pad0: u32, _pad1: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> u: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let idx = (wid.y * p.wg_x + wid.x) * WG_SIZE + lid;
  if (idx >= p.t * p.f) { return; }
  let t = idx / p.f;
  let i = idx - t * p.f;
  let gate = 1.0 / (1.0 + exp(-clamp(x[t * p.x_stride + i], -80.0, 80.0)));
  y[idx] = gate * u[t * p.u_stride + p.u_offset + i];
}
