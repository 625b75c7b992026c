// weights/q6_K: super-blocks of 256 = 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits), 16 × i8
// scales, f16 d (210 bytes). Element 128n + 32g + l (n < 2, g < 4, l < 32) is
//   q = ((ql[64n + l + 32(g&1)] >> 4(g>>1)) & 15) | (((qh[32n + l] >> 2g) & 3) << 4),
//   x = (d * scales[8n + l/16 + 2g]) * (q - 32).
// A chunk is the 32 elements of one (n, g).
const CHUNK: u32 = 32u;
const CHUNK_V4: u32 = 8u;
var<private> wq: array<vec4<f32>, 8>;

fn load_chunk(row_byte: u32, c: u32) {
  let o = row_byte + (c >> 3u) * 210u;
  let j = c & 7u;
  let n = j >> 2u;
  let g = j & 3u;
  let d = w_f16(o + 208u);
  let ql = o + 64u * n + 32u * (g & 1u);
  let qh = o + 128u + 32u * n;
  let sc = o + 192u + 8u * n + 2u * g;
  let scales = sbytes4_f32(w_u16(sc));  // .x for l < 16, .y for l >= 16
  let d_lo = d * scales.x;
  let d_hi = d * scales.y;
  let lshift = 4u * (g >> 1u);
  let hshift = 2u * g;
  for (var i = 0u; i < 8u; i++) {
    let lo = (w_u32(ql + 4u * i) >> lshift) & 0x0f0f0f0fu;
    let hi = ((w_u32(qh + 4u * i) >> hshift) & 0x03030303u) << 4u;
    let q = bytes4_f32(lo | hi) - 32.0;
    wq[i] = select(d_hi, d_lo, i < 4u) * q;
  }
}
