// rope-encoder: RoPE in place on the q and k heads of an encoder pass's packed rows, each token at its position in its
// own sequence (row t - first row of t's sequence: positions restart at 0 per input, lib/packed-seqs.wgsl), so
// nomic-bert's fused q|k|v projection is rotated where it lies and attention-encoder reads it in place.
//   qkv: token rows at p.stride; q's H heads of D at element p.q_off, k's Hkv heads at p.k_off (v untouched)
//   seq_starts: (B + 1) u32    rope_freq: the RoPE table (lib/rope-phase.wgsl), binding 3
// RoPE pairs as rope-kv-append: NEOX = false (2i, 2i + 1), NEOX = true (i, i + ROT/2), i < ROT/2; dimensions from ROT
// on are not touched (partial rotary).
// One invocation per rotated pair of one head of one token: linear id over T * (H + Hkv) * ROT/2 (grid2d).

override WG_SIZE: u32 = 64u;
override NEOX: bool = false;

struct Params {
  tokens: u32,     // T
  sequences: u32,  // B
  heads: u32,      // H
  kv_heads: u32,   // Hkv
  head_dim: u32,   // D
  half: u32,       // ROT / 2
  stride: u32,     // elements between two tokens' rows
  q_off: u32,      // element offset of q in a row
  k_off: u32,      // element offset of k in a row
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> qkv: array<f32>;
@group(0) @binding(2) var<storage, read> seq_starts: array<u32>;
@group(0) @binding(3) var<uniform> rope_freq: RopeTable;  // lib/rope-phase.wgsl

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let id = (wid.y * nwg.x + wid.x) * WG_SIZE + lid;
  let heads = p.heads + p.kv_heads;
  if (id >= p.tokens * heads * p.half) { return; }
  let i = id % p.half;
  let hr = (id / p.half) % heads;
  let t = id / (p.half * heads);
  var base = t * p.stride + p.q_off + hr * p.head_dim;
  if (hr >= p.heads) { base = t * p.stride + p.k_off + (hr - p.heads) * p.head_dim; }
  var u = 2u * i;
  var w = u + 1u;
  if (NEOX) {
    u = i;
    w = i + p.half;
  }
  let pos = t - seq_starts[seq_of(t, p.sequences)];
  let sc = rope_sin_cos(pos, i);
  let x0 = qkv[base + u];
  let x1 = qkv[base + w];
  qkv[base + u] = x0 * sc.y - x1 * sc.x;
  qkv[base + w] = x0 * sc.x + x1 * sc.y;
}
