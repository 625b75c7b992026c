// gemv: y[b, n] (+)= sum_k W[n, k] * x[b, k] (+ bias[n])     (decode path: one token per sequence)
//   W: rows [row0, row0 + rows) of an (N, K) weight in any ggml format, raw bytes as u32 (joined with
//      lib/bytes.wgsl, lib/weights/<dtype>.wgsl and its chunk_dot from lib/weights/*.dot.wgsl)
//   x: (B, K) f32, read as vec4      y: (B, N) f32      bias: (N) f32 when HAS_BIAS
// One invocation owns ROWS consecutive rows of one vector (b = p.v0 + wid.y) and walks all K/CHUNK chunks
// itself: each x chunk is loaded once into registers and reused for the ROWS rows, and there is no
// workgroup memory and no barrier. That suits software adapters (SwiftShader runs neighbouring
// invocations as SIMD lanes and pays a coroutine switch per lane group at every barrier; it has
// subgroups, but this variant measured faster there) and GPUs without subgroups; gemv.subgroup.wgsl is
// the variant for GPUs with subgroups. B ≥ 2 vectors run gemv.multi.wgsl (each weight chunk dequantized
// once for up to 4 vectors) except a lone vector left over from groups of 4.
// ACCUMULATE adds into y (the residual stream: no add kernel); NORM and GATED fuse the RMSNorm before
// and the gated activation after (lib/gemv-fusion.wgsl).

override WG_SIZE: u32 = 64u;
override ROWS: u32 = 4u;  // ≤ MAX_ROWS
override HAS_BIAS: bool = false;
override ACCUMULATE: bool = false;
override NORM: bool = false;
override GATED: u32 = 0u;

const MAX_ROWS: u32 = 16u;

// Params and bindings (p, w, x, y, bias): lib/matmul-io.wgsl; x_load, rms_scale, gate_act: lib/gemv-fusion.wgsl.

var<private> xc: array<vec4<f32>, 8>;  // CHUNK_V4 used
var<private> xc_sum: f32;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let first = (wid.x * WG_SIZE + lid) * ROWS;
  if (first >= p.rows) { return; }
  let vec = p.v0 + wid.y;
  let x_base = vec * (p.k / 4u);
  let last = min(first + ROWS, p.rows) - 1u;
  let chunks = p.k / CHUNK;
  let up_bytes = p.up_row * p.row_bytes;
  var acc: array<f32, MAX_ROWS>;
  var acc_up: array<f32, MAX_ROWS>;
  for (var c = 0u; c < chunks; c++) {
    var sum4 = vec4<f32>(0.0);
    for (var i = 0u; i < CHUNK_V4; i++) {
      let v = x_load(x_base, c * CHUNK_V4 + i);
      xc[i] = v;
      sum4 += v;
    }
    xc_sum = sum4.x + sum4.y + sum4.z + sum4.w;
    for (var r = 0u; r < ROWS; r++) {
      // rows past the part repeat the last one (cheaper than a branch) and are not written
      let row_byte = min(first + r, last) * p.row_bytes;
      acc[r] += chunk_dot(row_byte, c);
      if (GATED != 0u) { acc_up[r] += chunk_dot(row_byte + up_bytes, c); }
    }
  }
  var s = 1.0;
  if (NORM) { s = rms_scale(x_base); }
  for (var r = 0u; r < ROWS; r++) {
    let local_row = first + r;
    if (local_row > last) { break; }
    let row = p.row0 + local_row;
    var v = acc[r] * s;
    if (HAS_BIAS) { v += bias[row]; }
    if (GATED != 0u) { v = gate_act(v, acc_up[r] * s); }
    let yi = vec * p.n + row;
    if (ACCUMULATE) { v += y[yi]; }
    y[yi] = v;
  }
}
