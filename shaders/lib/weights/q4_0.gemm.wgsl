// weights/q4_0.gemm: load_chunk for q4_0 (same contract as weights/q4_0.wgsl: CHUNK, CHUNK_V4, wq),
// for the GEMM kernels, which dequantize a chunk once and reuse it across tokens. The block's five
// words are read once (w_scaled_block16 in lib/bytes.wgsl, not w_u32 per word) and nibbles are widened with unpack4x8unorm
// (q / 255, one instruction on most targets) with 255 folded into d: x = (255 d) unorm(q) - 8 d.
const CHUNK: u32 = 32u;
const CHUNK_V4: u32 = 8u;
var<private> wq: array<vec4<f32>, 8>;

fn load_chunk(row_byte: u32, c: u32) {
  let blk = w_scaled_block16(row_byte + c * 18u);
  let d = blk.d;
  let q0 = blk.q.x; let q1 = blk.q.y; let q2 = blk.q.z; let q3 = blk.q.w;
  let m = 0x0f0f0f0fu;
  let s = 255.0 * d;
  let b = vec4<f32>(-8.0 * d);
  wq[0] = fma(unpack4x8unorm(q0 & m), vec4<f32>(s), b);
  wq[1] = fma(unpack4x8unorm(q1 & m), vec4<f32>(s), b);
  wq[2] = fma(unpack4x8unorm(q2 & m), vec4<f32>(s), b);
  wq[3] = fma(unpack4x8unorm(q3 & m), vec4<f32>(s), b);
  wq[4] = fma(unpack4x8unorm((q0 >> 4u) & m), vec4<f32>(s), b);
  wq[5] = fma(unpack4x8unorm((q1 >> 4u) & m), vec4<f32>(s), b);
  wq[6] = fma(unpack4x8unorm((q2 >> 4u) & m), vec4<f32>(s), b);
  wq[7] = fma(unpack4x8unorm((q3 >> 4u) & m), vec4<f32>(s), b);
}
