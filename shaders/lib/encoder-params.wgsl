// lib/encoder-params: the uniform block of the encoder attention kernels (attention-encoder.wgsl and its .rows
// sibling), so both wrappers pack the same 12 words (kernels/attention-encoder.ts). q, k and v are rows of
// token-major buffers at any stride and element offset, so one fused q|k|v projection (T, (H + 2 Hkv) D) is read in
// place: token t's head h of q starts at element t * q_stride + q_off + h * D (k and v alike with kv head kvh).
// Strides and offsets are multiples of 4 (read as vec4).

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
  _pad: u32,
}
