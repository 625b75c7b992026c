// gemv: y[b, n] (+)= sum_k W[n, k] * x[b, k] (+ bias[n])     (decode path: one token per sequence)
//   W: rows [row0, row0 + rows) of an (N, K) weight in any ggml format, raw bytes as u32 (joined with
//      lib/bytes.wgsl, lib/weights/<dtype>.wgsl and a chunk_dot from lib/weights/*.dot.wgsl)
//   x: (B, K) f32, read as vec4      y: (B, N) f32      bias: (N) f32 when HAS_BIAS
// One invocation owns one row of one vector and walks all K/CHUNK chunks itself: no workgroup
// memory and no barriers. That suits software adapters (SwiftShader runs neighbouring invocations as
// SIMD lanes, so 4 rows advance in lockstep, and a barrier costs a coroutine switch per lane group)
// and any GPU without subgroups. gemv.subgroup.wgsl is the variant for adapters with subgroups.
// Vector b = gid.y. ACCUMULATE adds into y (the residual stream), saving an add kernel.

override WG_SIZE: u32 = 64u;
override HAS_BIAS: bool = false;
override ACCUMULATE: bool = false;

struct Params {
  n: u32,          // N: rows of the full weight (y's row length)
  k: u32,          // K
  row_bytes: u32,  // bytes of one weight row
  row0: u32,       // first row held by this weight part
  rows: u32,       // rows held by this weight part
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;

var<private> x_base: u32;
fn x4(i: u32) -> vec4<f32> { return x[x_base + i]; }

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let local_row = wid.x * WG_SIZE + lid;
  if (local_row >= p.rows) { return; }
  let vec = wid.y;
  x_base = vec * (p.k / 4u);
  let rb = local_row * p.row_bytes;
  let chunks = p.k / CHUNK;
  var acc = 0.0;
  for (var c = 0u; c < chunks; c++) {
    acc += chunk_dot(rb, c, c * CHUNK_V4);
  }
  let row = p.row0 + local_row;
  if (HAS_BIAS) { acc += bias[row]; }
  let yi = vec * p.n + row;
  if (ACCUMULATE) { acc += y[yi]; }
  y[yi] = acc;
}
