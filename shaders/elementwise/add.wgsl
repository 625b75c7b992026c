// add: y[i] = a[i] + b[i]     (residual add when it cannot be fused into a GEMV/RMSNorm)
//   a, b, y: (n) f32; y may be bound to the same buffer as a (in-place), through the read_write binding.
// One invocation per 4 elements (vec4 when n % 4 == 0, scalar tail otherwise); workgroups spread over
// x and y for large n.

override WG_SIZE: u32 = 256u;

struct Params { n: u32, wg_x: u32, _pad0: u32, _pad1: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let base = ((wid.y * p.wg_x + wid.x) * WG_SIZE + lid) * 4u;
  for (var j = 0u; j < 4u; j++) {
    let i = base + j;
    if (i < p.n) { a[i] = a[i] + b[i]; }
  }
}
