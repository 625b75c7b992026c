// weights/q6_K: super-blocks of 256 = 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits), 16 × i8
// scales, f16 d (210 bytes). Element 128n + 32g + l (n < 2, g < 4, l < 32) is
//   q = ((ql[64n + l + 32(g&1)] >> 4(g>>1)) & 15) | (((qh[32n + l] >> 2g) & 3) << 4),
//   x = (d * scales[8n + l/16 + 2g]) * (q - 32).
// A chunk is the 32 elements of one (n, g).
const CHUNK: u32 = 32u;
const CHUNK_V4: u32 = 8u;
var<private> wq: array<vec4<f32>, 8>;

// Chunk c, the quarter (n, g) of its super-block: d, where its low and high bits are, its two scales (elements
// 0..15, 16..31) and the shifts that take its bits out of the shared ql and qh bytes. Shared with the dot
// and multi libs (lib/weights/q6_K.dot.wgsl, q6_K.multi.wgsl).
struct Q6kChunk {
  d: f32,
  ql: u32,
  qh: u32,
  scales: vec2<f32>,
  lshift: u32,
  hshift: u32,
}

fn q6k_chunk(row_byte: u32, c: u32) -> Q6kChunk {
  let o = row_byte + (c >> 3u) * 210u;
  let j = c & 7u;
  let n = j >> 2u;
  let g = j & 3u;
  let scales = sbytes4_f32(w_u16(o + 192u + 8u * n + 2u * g)).xy;
  return Q6kChunk(w_f16(o + 208u), o + 64u * n + 32u * (g & 1u), o + 128u + 32u * n, scales, 4u * (g >> 1u), 2u * g);
}

// The 6-bit q of 16 elements of the chunk (`at` 0: elements 0..15, 16: 16..31), four to a word.
fn q6k_words(k: Q6kChunk, at: u32) -> vec4<u32> {
  let lo = (w_u32x4(k.ql + at) >> vec4<u32>(k.lshift)) & vec4<u32>(0x0f0f0f0fu);
  let hi = (w_u32x4(k.qh + at) >> vec4<u32>(k.hshift)) & vec4<u32>(0x03030303u);
  return lo | (hi << vec4<u32>(4u));
}

fn load_chunk(row_byte: u32, c: u32) {
  let k = q6k_chunk(row_byte, c);
  let d_lo = k.d * k.scales.x;
  let d_hi = k.d * k.scales.y;
  let lo = q6k_words(k, 0u);
  let hi = q6k_words(k, 16u);
  wq[0] = d_lo * (bytes4_f32(lo.x) - 32.0);
  wq[1] = d_lo * (bytes4_f32(lo.y) - 32.0);
  wq[2] = d_lo * (bytes4_f32(lo.z) - 32.0);
  wq[3] = d_lo * (bytes4_f32(lo.w) - 32.0);
  wq[4] = d_hi * (bytes4_f32(hi.x) - 32.0);
  wq[5] = d_hi * (bytes4_f32(hi.y) - 32.0);
  wq[6] = d_hi * (bytes4_f32(hi.z) - 32.0);
  wq[7] = d_hi * (bytes4_f32(hi.w) - 32.0);
}
