// gemv.multi: y[b, n] (+)= sum_k W[n, k] * x[b, k] (+ bias[n]) for B ≥ 2 vectors, each weight chunk
// dequantized once for a group of up to 4 of them (batched decode, speculative verify: a few tokens).
//   W: rows [row0, row0 + rows) of an (N, K) weight in any ggml format, raw bytes as u32 (joined with
//      lib/bytes.wgsl, lib/weights/<dtype>.wgsl, lib/weights/multi.wgsl and the format's chunk_dot4:
//      lib/weights/<dtype>.multi.wgsl or vec4.multi.wgsl)
//   x: (B, K) f32, read as vec4      y: (B, N) f32      bias: (N) f32 when HAS_BIAS
//   p.t: B      p.v0: the first vector of this dispatch (the wrapper splits a batch into dispatches)
// One invocation owns ROWS consecutive rows of the group of vectors v0 = p.v0 + 4 wid.y .. v0 + 3 (those
// past B repeat the last one and are not written) and walks all K/CHUNK chunks itself: the group's x
// chunk is loaded once into private memory and reused for the ROWS rows, and each row's chunk is
// widened once and dotted with the 4 vectors (vec4 · mat4x4; WIDTH 2 does two dots instead). No
// workgroup memory and no barrier (see gemv.wgsl for why). On SwiftShader, 4-invocation workgroups with
// 16 rows each measured fastest: 4 vectors cost ~1.75x one (q4_0, SmolLM2-135M shapes), not 4x.
// gemv.multi.subgroup.wgsl is the variant for GPUs with subgroups, gemv.wgsl the one-vector kernel.
// ACCUMULATE adds into y (the residual stream); NORM and GATED fuse the RMSNorm before and the gated
// activation after (lib/gemv-fusion.wgsl).

override WG_SIZE: u32 = 64u;
override ROWS: u32 = 16u;  // ≤ MAX_ROWS
override WIDTH: u32 = 4u;  // vectors computed at once: 2 (B = 2) or 4 (B = 3, 4; lib/weights/multi.wgsl)
override HAS_BIAS: bool = false;
override ACCUMULATE: bool = false;
override NORM: bool = false;
override GATED: u32 = 0u;

const MAX_ROWS: u32 = 16u;

// Params and bindings (p, w, x, y, bias): lib/matmul-io.wgsl, joined by the wrapper; group_x, group_scale,
// load_x and store_row: lib/weights/multi.wgsl.

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let first = (wid.x * WG_SIZE + lid) * ROWS;
  if (first >= p.rows) { return; }
  let last = min(first + ROWS, p.rows) - 1u;
  let v0 = p.v0 + wid.y * 4u;
  let xb = group_x(v0);
  let up_bytes = p.up_row * p.row_bytes;
  var acc: array<vec4<f32>, MAX_ROWS>;
  var acc_up: array<vec4<f32>, MAX_ROWS>;
  for (var r = 0u; r < ROWS; r++) { acc[r] = vec4<f32>(0.0); acc_up[r] = vec4<f32>(0.0); }
  let chunks = p.k / CHUNK;
  for (var c = 0u; c < chunks; c++) {
    load_x(xb, c * CHUNK_V4);
    for (var r = 0u; r < ROWS; r++) {
      // rows past the part repeat the last one (cheaper than a branch) and are not written
      let row_byte = min(first + r, last) * p.row_bytes;
      acc[r] += chunk_dot4(row_byte, c);
      if (GATED != 0u) { acc_up[r] += chunk_dot4(row_byte + up_bytes, c); }
    }
  }
  let s = group_scale(xb);
  for (var r = 0u; r < ROWS; r++) {
    if (first + r > last) { break; }
    store_row(first + r, v0, acc[r] * s, acc_up[r] * s);
  }
}
