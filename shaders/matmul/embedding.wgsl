// embedding: out[t, :] = dequant(W[ids[t], :]) * SCALE     (token embedding gather; Gemma scales by √C)
//   W: rows [row0, row0 + rows) of a (V, C) weight in any ggml format, raw bytes as u32
//      (joined with lib/bytes.wgsl and one lib/weights/<dtype>.wgsl, which defines CHUNK and load_chunk)
//   ids: (T) u32      out: (T, C) f32, written as vec4
// The wrapper dispatches once per weight part; a token whose id lies in another part is skipped.
// Ids ≥ V (including negative i32 ids seen as u32) never read W: the dispatch with zero_oob set (the
// first part's) writes zeros for them.
// One invocation dequantizes one CHUNK of one token's row and writes it; a workgroup covers WG_SIZE
// chunks of that row; workgroups run over (chunks of C, tokens), tokens on y and z.
// Bit-exact with reference/embedding.ts for every format: the dequantizers' products (f16 d × 6-bit
// scale × 4-bit q for q4_K, d × i8 scale × 6-bit q for q6_K, ...) fit f32's 24-bit significand, so
// fused multiply-add cannot change q4_K's `d1 * q - m1`. The gathered values are moved, never multiplied, so
// f32 subnormal weights survive GPUs that flush them in arithmetic (SwiftShader does, not in moves).

override WG_SIZE: u32 = 64u;
override SCALE: f32 = 1.0;  // 1: the values are moved, never multiplied (see above)

struct Params {
  v: u32,          // V: rows of the full weight
  c: u32,          // C: row length
  row_bytes: u32,  // bytes of one weight row
  row0: u32,       // first row held by this weight part
  rows: u32,       // rows held by this weight part
  t: u32,          // T: tokens
  zero_oob: u32,   // 1: this dispatch writes zeros for ids ≥ V
  _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read> ids: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<vec4<f32>>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let tok = wid.z * nwg.y + wid.y;
  let c = wid.x * WG_SIZE + lid;  // chunk of the row
  if (tok >= p.t || c >= p.c / CHUNK) { return; }
  let id = ids[tok];
  let o = tok * (p.c / 4u) + c * CHUNK_V4;
  if (id >= p.v) {
    if (p.zero_oob != 0u) {
      for (var i = 0u; i < CHUNK_V4; i++) { out[o + i] = vec4<f32>(0.0); }
    }
    return;
  }
  if (id < p.row0 || id - p.row0 >= p.rows) { return; }  // another part holds this row
  load_chunk((id - p.row0) * p.row_bytes, c);
  if (SCALE == 1.0) {
    for (var i = 0u; i < CHUNK_V4; i++) { out[o + i] = wq[i]; }
  } else {
    for (var i = 0u; i < CHUNK_V4; i++) { out[o + i] = wq[i] * SCALE; }
  }
}
