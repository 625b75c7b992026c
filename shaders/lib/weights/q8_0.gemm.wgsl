// weights/q8_0.gemm: load_chunk for q8_0 (same contract as weights/q8_0.wgsl: CHUNK, CHUNK_V4, wq),
// for the GEMM kernels. The block's nine words are read once (w_scaled_block32 in lib/bytes.wgsl); signed bytes are biased to unsigned
// (q ^ 0x80 = q + 128) so one unpack4x8unorm widens four: x = (255 d) unorm(q + 128) - 128 d.
const CHUNK: u32 = 32u;
const CHUNK_V4: u32 = 8u;
var<private> wq: array<vec4<f32>, 8>;

// Four signed bytes of a word, dequantized: (255 d) unorm(q + 128) - 128 d.
fn q8_0_gemm_word(q: u32, s: f32, b: f32) -> vec4<f32> {
  return fma(unpack4x8unorm(q ^ 0x80808080u), vec4<f32>(s), vec4<f32>(b));
}

fn load_chunk(row_byte: u32, c: u32) {
  let blk = w_scaled_block32(row_byte + c * 34u);
  let s = 255.0 * blk.d;
  let b = -128.0 * blk.d;
  wq[0] = q8_0_gemm_word(blk.lo.x, s, b);
  wq[1] = q8_0_gemm_word(blk.lo.y, s, b);
  wq[2] = q8_0_gemm_word(blk.lo.z, s, b);
  wq[3] = q8_0_gemm_word(blk.lo.w, s, b);
  wq[4] = q8_0_gemm_word(blk.hi.x, s, b);
  wq[5] = q8_0_gemm_word(blk.hi.y, s, b);
  wq[6] = q8_0_gemm_word(blk.hi.z, s, b);
  wq[7] = q8_0_gemm_word(blk.hi.w, s, b);
}
