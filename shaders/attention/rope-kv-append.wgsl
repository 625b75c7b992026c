// rope-kv-append: a step's q, k and v projections to what attention reads, in one dispatch:
//   q heads: rotated (RoPE) into q_out (T, H, D);  k heads: rotated into the paged k_cache;  v heads: copied into
//   the paged v_cache, each token at its position (page page_table[seq_ids[t], pos / PAGE], slot pos % PAGE).
// QK_NORM first RMS-normalizes each q and k head over D with its weight (Qwen3's q_norm and k_norm).
//   qkv: (T, (H + 2 Hkv) D) f32, token t's row [q (H D) | k (Hkv D) | v (Hkv D)] (the q|k|v GEMV's output)
//   q_out: (T, H, D) f32    k_cache, v_cache: (pages, PAGE, Hkv, D) f32 (the layout of kernels/paged-kv.ts)
//   page_table: (B, max_pages) u32    seq_ids, positions: (T) u32
//   norm: [q_norm (D) | k_norm (D)] f32 (QK_NORM only)    rope_freq: the RoPE table (lib/rope-phase.wgsl)
// RoPE pairs: NEOX = false (u, w) = (2i, 2i + 1) (GGUF/llama.cpp), NEOX = true (i, i + ROT/2) (Hugging Face
// rotate-half), for i < ROT/2; dimensions from ROT on are copied (partial rotary).
// One invocation per two dimensions of one head of one token (linear id over T * (H + Hkv) * D/2, grid2d): pair i
// of the head when i < ROT/2, else the two unrotated dimensions ROT + 2 (i - ROT/2) and the next; a kv head's
// invocation also copies v's dimensions 2i and 2i + 1. Under QK_NORM each invocation sums its head's squares
// itself (D reads, no barrier). A token whose page-table entry is out of range writes q but no K/V.

override WG_SIZE: u32 = 64u;
override NEOX: bool = false;
override QK_NORM: bool = false;

struct Params {
  tokens: u32,      // T
  heads: u32,       // H
  kv_heads: u32,    // Hkv
  head_dim: u32,    // D
  half: u32,        // ROT / 2: rotated pairs per head
  _pad1: u32,
  page_size: u32,   // PAGE
  max_pages: u32,   // page-table columns
  sequences: u32,   // B: page-table rows
  pages: u32,       // pages in the cache
  eps: f32,         // QK_NORM's epsilon
  _pad0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> qkv: array<f32>;
@group(0) @binding(2) var<storage, read_write> q_out: array<f32>;
@group(0) @binding(3) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(4) var<storage, read_write> v_cache: array<f32>;
@group(0) @binding(5) var<storage, read> page_table: array<u32>;
@group(0) @binding(6) var<storage, read> seq_ids: array<u32>;
@group(0) @binding(7) var<storage, read> positions: array<u32>;
@group(0) @binding(8) var<storage, read> norm: array<f32>;
@group(0) @binding(9) var<uniform> rope_freq: RopeTable;  // lib/rope-phase.wgsl

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let id = (wid.y * nwg.x + wid.x) * WG_SIZE + lid;
  let d = p.head_dim;
  let pairs = d / 2u;
  let heads = p.heads + p.kv_heads;
  if (id >= p.tokens * heads * pairs) { return; }
  let i = id % pairs;
  let hr = (id / pairs) % heads;
  let t = id / (pairs * heads);
  let is_q = hr < p.heads;
  let src = (t * (heads + p.kv_heads) + hr) * d;  // the head's row in qkv (k heads follow the q heads, v heads them)

  // the two dimensions this invocation owns
  let rot = 2u * p.half;
  var u = 2u * i;
  var w = u + 1u;
  if (i >= p.half) {
    u = rot + 2u * (i - p.half);
    w = u + 1u;
  } else if (NEOX) {
    u = i;
    w = i + p.half;
  }
  var x0 = qkv[src + u];
  var x1 = qkv[src + w];
  if (QK_NORM) {
    var ss = 0.0;
    for (var e = 0u; e < d; e++) {
      let v = qkv[src + e];
      ss += v * v;
    }
    let s = inverseSqrt(ss / f32(d) + p.eps);
    let nb = select(d, 0u, is_q);
    x0 = x0 * s * norm[nb + u];
    x1 = x1 * s * norm[nb + w];
  }
  let pos = positions[t];
  if (i < p.half) {
    let sc = rope_sin_cos(pos, i);
    let r0 = x0 * sc.y - x1 * sc.x;
    x1 = x0 * sc.x + x1 * sc.y;
    x0 = r0;
  }
  if (is_q) {
    let dst = (t * p.heads + hr) * d;
    q_out[dst + u] = x0;
    q_out[dst + w] = x1;
    return;
  }
  let seq = seq_ids[t];
  let col = pos / p.page_size;
  if (seq >= p.sequences || col >= p.max_pages) { return; }
  let page = page_table[seq * p.max_pages + col];
  if (page >= p.pages) { return; }
  let kvh = hr - p.heads;
  let dst = ((page * p.page_size + pos % p.page_size) * p.kv_heads + kvh) * d;
  k_cache[dst + u] = x0;
  k_cache[dst + w] = x1;
  let v_src = src + p.kv_heads * d;  // v head kvh follows k head kvh by Hkv heads
  v_cache[dst + 2u * i] = qkv[v_src + 2u * i];
  v_cache[dst + 2u * i + 1u] = qkv[v_src + 2u * i + 1u];
}
