// lib/attention-params: the uniform block of the four attention kernels (decode and prefill, workgroup and
// rows variants), so every wrapper packs the same 12 words (kernels/paged-kv.ts attentionParams()).
// The split fields are the decode kernels' (flash-decoding partials); prefill leaves them 0.

struct Params {
  tokens: u32,     // T
  heads: u32,      // H
  kv_heads: u32,   // Hkv
  page_size: u32,  // PAGE
  max_pages: u32,  // page-table columns
  split: u32,      // SPLIT: keys per chunk (decode)
  splits: u32,     // NS: chunks per row in part (ceil(maxContext / SPLIT)) (decode)
  ml_offset: u32,  // first float of the (m, l) pairs in part (decode)
  scale: f32,
  window: u32,     // sliding window (keys pos - j < window), 0 = full causal
  _pad1: u32,
  _pad2: u32,
}
