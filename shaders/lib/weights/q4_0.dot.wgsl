// weights/q4_0.dot: chunk_dot(row_byte, c) = sum_j W[row, 32c + j] * xc[j] for one q4_0 block, from
// registers. The joining kernel declares `var<private> xc: array<vec4<f32>, 8>` (the x chunk,
// loaded once and reused for several rows) and `var<private> xc_sum: f32` (its sum).
// Nibbles are widened with unpack4x8unorm (q / 255, one instruction on most targets) and 255 is folded
// into d, then sum (q - 8) x = 255 * d * sum unorm(q) x - 8 d * sum x.

fn chunk_dot(row_byte: u32, c: u32) -> f32 {
  let o = row_byte + c * 18u;
  let wi = o >> 2u;
  let odd = (o & 2u) != 0u;  // block starts mid-word: d is the high half, qs are word aligned
  let w0 = w[wi]; let w1 = w[wi + 1u]; let w2 = w[wi + 2u]; let w3 = w[wi + 3u]; let w4 = w[wi + 4u];
  let d = unpack2x16float(select(w0, w0 >> 16u, odd)).x;
  let q0 = select((w0 >> 16u) | (w1 << 16u), w1, odd);
  let q1 = select((w1 >> 16u) | (w2 << 16u), w2, odd);
  let q2 = select((w2 >> 16u) | (w3 << 16u), w3, odd);
  let q3 = select((w3 >> 16u) | (w4 << 16u), w4, odd);
  let m = 0x0f0f0f0fu;
  let s = dot(unpack4x8unorm(q0 & m), xc[0]) + dot(unpack4x8unorm(q1 & m), xc[1])
        + dot(unpack4x8unorm(q2 & m), xc[2]) + dot(unpack4x8unorm(q3 & m), xc[3])
        + dot(unpack4x8unorm((q0 >> 4u) & m), xc[4]) + dot(unpack4x8unorm((q1 >> 4u) & m), xc[5])
        + dot(unpack4x8unorm((q2 >> 4u) & m), xc[6]) + dot(unpack4x8unorm((q3 >> 4u) & m), xc[7]);
  return d * (255.0 * s - 8.0 * xc_sum);
}
