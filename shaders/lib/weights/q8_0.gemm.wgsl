// weights/q8_0.gemm: load_chunk for q8_0 (same contract as weights/q8_0.wgsl: CHUNK, CHUNK_V4, wq),
// for the GEMM kernels. The block's nine words are read once; signed bytes are biased to unsigned
// (q ^ 0x80 = q + 128) so one unpack4x8unorm widens four: x = (255 d) unorm(q + 128) - 128 d.
const CHUNK: u32 = 32u;
const CHUNK_V4: u32 = 8u;
var<private> wq: array<vec4<f32>, 8>;

fn q8_0_gemm_word(prev: u32, next: u32, odd: bool, s: f32, b: f32) -> vec4<f32> {
  let q = select((prev >> 16u) | (next << 16u), next, odd) ^ 0x80808080u;
  return fma(unpack4x8unorm(q), vec4<f32>(s), vec4<f32>(b));
}

fn load_chunk(row_byte: u32, c: u32) {
  let o = row_byte + c * 34u;
  let wi = o >> 2u;
  let odd = (o & 2u) != 0u;
  let w0 = w[wi]; let w1 = w[wi + 1u]; let w2 = w[wi + 2u]; let w3 = w[wi + 3u]; let w4 = w[wi + 4u];
  let w5 = w[wi + 5u]; let w6 = w[wi + 6u]; let w7 = w[wi + 7u]; let w8 = w[wi + 8u];
  let d = unpack2x16float(select(w0, w0 >> 16u, odd)).x;
  let s = 255.0 * d;
  let b = -128.0 * d;
  wq[0] = q8_0_gemm_word(w0, w1, odd, s, b);
  wq[1] = q8_0_gemm_word(w1, w2, odd, s, b);
  wq[2] = q8_0_gemm_word(w2, w3, odd, s, b);
  wq[3] = q8_0_gemm_word(w3, w4, odd, s, b);
  wq[4] = q8_0_gemm_word(w4, w5, odd, s, b);
  wq[5] = q8_0_gemm_word(w5, w6, odd, s, b);
  wq[6] = q8_0_gemm_word(w6, w7, odd, s, b);
  wq[7] = q8_0_gemm_word(w7, w8, odd, s, b);
}
