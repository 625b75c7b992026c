// lib/encoder-params: the uniform block of the encoder attention kernels (attention-encoder.wgsl and its .rows
// sibling), so both wrappers pack the same 12 words (kernels/attention-encoder.ts). q, k and v are rows of
// token-major buffers at any stride and element offset, so one fused q|k|v projection (T, (H + 2 Hkv) D) is read in
// place: token t's head h of q starts at element t * q_stride + q_off + h * D (k and v alike with kv head kvh).
// Strides and offsets are multiples of 4 (read as vec4). A query at row t sees the keys of its own sequence within
// [t - before, t + after] (its reach): 0xFFFFFFFF both ways for an encoder (every key), after = 0 for causal attention,
// before = after = W/2 for a symmetric sliding window (EmbeddingGemma's local layers).

struct Params {
  tokens: u32,     // T: packed rows
  sequences: u32,  // B: rows of seq_starts minus one
  heads: u32,      // H
  kv_heads: u32,   // Hkv (H % Hkv == 0; query head h reads kv head h / (H / Hkv))
  q_stride: u32,   // elements between two tokens' q rows
  q_off: u32,      // element offset of q in its row
  k_stride: u32,
  k_off: u32,
  v_stride: u32,
  v_off: u32,
  scale: f32,      // of the scores q . k (1 / sqrt(D) unless told)
  before: u32,     // most keys before the query's row that it sees
  after: u32,      // most keys after it (0: causal)
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

// The keys [key0, key1) of the query at row t (key0 <= t < key1: its sequence's rows) that its reach lets it see.
fn reach_of(t: u32, key0: u32, key1: u32) -> vec2<u32> {
  var a = key0;
  var z = key1;
  if (t - a > p.before) { a = t - p.before; }
  if (z - 1u - t > p.after) { z = t + p.after + 1u; }
  return vec2<u32>(a, z);
}
