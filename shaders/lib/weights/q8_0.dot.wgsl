// weights/q8_0.dot: chunk_dot for one q8_0 block (34 bytes: f16 d, 32 × i8), from registers; same
// contract as q4_0.dot (xc, xc_sum). Signed bytes are biased to unsigned (q ^ 0x80 = q + 128) so one
// unpack4x8unorm widens four: sum q x = 255 * sum unorm(q + 128) x - 128 * sum x.

fn q8_0_word(prev: u32, next: u32, odd: bool) -> vec4<f32> {
  return unpack4x8unorm(select((prev >> 16u) | (next << 16u), next, odd) ^ 0x80808080u);
}

fn chunk_dot(row_byte: u32, c: u32) -> f32 {
  let o = row_byte + c * 34u;
  let wi = o >> 2u;
  let odd = (o & 2u) != 0u;
  let w0 = w[wi]; let w1 = w[wi + 1u]; let w2 = w[wi + 2u]; let w3 = w[wi + 3u]; let w4 = w[wi + 4u];
  let w5 = w[wi + 5u]; let w6 = w[wi + 6u]; let w7 = w[wi + 7u]; let w8 = w[wi + 8u];
  let d = unpack2x16float(select(w0, w0 >> 16u, odd)).x;
  let s = dot(q8_0_word(w0, w1, odd), xc[0]) + dot(q8_0_word(w1, w2, odd), xc[1])
        + dot(q8_0_word(w2, w3, odd), xc[2]) + dot(q8_0_word(w3, w4, odd), xc[3])
        + dot(q8_0_word(w4, w5, odd), xc[4]) + dot(q8_0_word(w5, w6, odd), xc[5])
        + dot(q8_0_word(w6, w7, odd), xc[6]) + dot(q8_0_word(w7, w8, odd), xc[7]);
  return d * (255.0 * s - 128.0 * xc_sum);
}
