// weights/q4_K.gemm: load_chunk for q4_K (same contract as weights/q4_K.wgsl: CHUNK, CHUNK_V4, wq),
// for the GEMM kernels: written out without loops (SwiftShader keeps loop-indexed private arrays in
// memory) and nibbles widened with unpack4x8unorm, 255 folded into the scale:
// x = (255 d sc_j) unorm(q) - dmin m_j. Super-blocks are 144 bytes, so every read is word aligned.
const CHUNK: u32 = 32u;
const CHUNK_V4: u32 = 8u;
var<private> wq: array<vec4<f32>, 8>;

fn load_chunk(row_byte: u32, c: u32) {
  let wi = (row_byte >> 2u) + (c >> 3u) * 36u;
  let j = c & 7u;
  let dd = unpack2x16float(w[wi]);  // (d, dmin)
  let sm = q4k_scale_min(wi, j);  // (sc_j, m_j): lib/weights/q4_K.scales.wgsl
  let scale = vec4<f32>(255.0 * dd.x * f32(sm.x));
  let bias = vec4<f32>(-dd.y * f32(sm.y));
  let q = wi + 4u + (j >> 1u) * 8u;
  let shift = (j & 1u) * 4u;
  let mk = 0x0f0f0f0fu;
  wq[0] = fma(unpack4x8unorm((w[q] >> shift) & mk), scale, bias);
  wq[1] = fma(unpack4x8unorm((w[q + 1u] >> shift) & mk), scale, bias);
  wq[2] = fma(unpack4x8unorm((w[q + 2u] >> shift) & mk), scale, bias);
  wq[3] = fma(unpack4x8unorm((w[q + 3u] >> shift) & mk), scale, bias);
  wq[4] = fma(unpack4x8unorm((w[q + 4u] >> shift) & mk), scale, bias);
  wq[5] = fma(unpack4x8unorm((w[q + 5u] >> shift) & mk), scale, bias);
  wq[6] = fma(unpack4x8unorm((w[q + 6u] >> shift) & mk), scale, bias);
  wq[7] = fma(unpack4x8unorm((w[q + 7u] >> shift) & mk), scale, bias);
}
