// gemv: y[n] (+)= sum_k W[n, k] * x[k] (+ bias[n])     (decode path: one token per sequence)
//   W: rows [row0, row0 + rows) of an (N, K) weight in any ggml format, raw bytes as u32
//      (joined with lib/bytes.wgsl and one lib/weights/<dtype>.wgsl, which defines CHUNK and load_chunk)
//   x: (B, K) f32, read as vec4      y: (B, N) f32      bias: (N) f32 when HAS_BIAS
// B > 1 runs B independent vectors against the same weight (one workgroup row per vector, gid.y).
// One workgroup owns ROWS rows of one vector; its invocations stride over the K/CHUNK chunks,
// dequantize each chunk in registers, dot it with x, then reduce across the workgroup.
// ACCUMULATE adds into y (the residual stream), saving an add kernel.
// Variants: any weight format × HAS_BIAS × ACCUMULATE; f32 math, no optional features needed.

override WG_SIZE: u32 = 64u;
override ROWS: u32 = 2u;
override HAS_BIAS: bool = false;
override ACCUMULATE: bool = false;

struct Params {
  n: u32,          // N: rows of the full weight (y's row length)
  k: u32,          // K
  row_bytes: u32,  // bytes of one weight row
  row0: u32,       // first row held by this weight part
  rows: u32,       // rows held by this weight part
  wg_x: u32,       // workgroups along x per vector
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;

var<workgroup> partial: array<f32, WG_SIZE>;

fn x4(i: u32) -> vec4<f32> { return x[i]; }

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let vec = wid.y;
  let first = wid.x * ROWS;  // uniform per workgroup
  let chunks = p.k / CHUNK;
  let x0 = vec * (p.k / 4u);
  for (var r = 0u; r < ROWS; r++) {
    let local_row = first + r;
    var acc = 0.0;
    if (local_row < p.rows) {
      let rb = local_row * p.row_bytes;
      for (var c = lid; c < chunks; c += WG_SIZE) {
        acc += chunk_dot(rb, c, x0 + c * CHUNK_V4);
      }
    }
    partial[lid] = acc;
    workgroupBarrier();
    for (var s = WG_SIZE / 2u; s > 0u; s = s >> 1u) {
      if (lid < s) { partial[lid] += partial[lid + s]; }
      workgroupBarrier();
    }
    if (lid == 0u && local_row < p.rows) {
      let row = p.row0 + local_row;
      var v = partial[0];
      if (HAS_BIAS) { v += bias[row]; }
      let yi = vec * p.n + row;
      if (ACCUMULATE) { v += y[yi]; }
      y[yi] = v;
    }
    workgroupBarrier();
  }
}
