// lib/sampling-params: the per-sequence record both sampling kernels read (64 bytes; packed by
// packSamplingBatch/writeSeqParams in kernels/sample.ts, field for field). Offsets of 0xffffffff mean
// "none" for the history, bias and mask slices.

struct SeqParams {
  temperature: f32, top_k: u32, top_p: f32, min_p: f32,
  repetition: f32, presence: f32, frequency: f32, u: f32,
  history_offset: u32, history_len: u32, bias_offset: u32, bias_len: u32,
  mask_offset: u32, n_logprobs: u32, _pad0: u32, _pad1: u32,
}
