// weights/q4_0.dot: chunk_dot(row_byte, c, xi) = sum_j W[row, 32c + j] * x[32c + j] for one q4_0
// block, straight from registers (no dequantized copy). The joining kernel defines
// `fn x4(i: u32) -> vec4<f32>` returning x[4i .. 4i+4) and passes xi = the block's first vec4 index.

fn chunk_dot(row_byte: u32, c: u32, xi: u32) -> f32 {
  let o = row_byte + c * 18u;
  let wi = o >> 2u;
  let odd = (o & 2u) != 0u;  // block starts mid-word: d is the high half, qs are word aligned
  let w0 = w[wi]; let w1 = w[wi + 1u]; let w2 = w[wi + 2u]; let w3 = w[wi + 3u]; let w4 = w[wi + 4u];
  let d = unpack2x16float(select(w0, w0 >> 16u, odd)).x;
  let q0 = select((w0 >> 16u) | (w1 << 16u), w1, odd);
  let q1 = select((w1 >> 16u) | (w2 << 16u), w2, odd);
  let q2 = select((w2 >> 16u) | (w3 << 16u), w3, odd);
  let q3 = select((w3 >> 16u) | (w4 << 16u), w4, odd);
  // sum (q - 8) x = sum q x - 8 sum x
  var s = dot(lo_nibbles(q0), x4(xi)) + dot(lo_nibbles(q1), x4(xi + 1u))
        + dot(lo_nibbles(q2), x4(xi + 2u)) + dot(lo_nibbles(q3), x4(xi + 3u))
        + dot(hi_nibbles(q0), x4(xi + 4u)) + dot(hi_nibbles(q1), x4(xi + 5u))
        + dot(hi_nibbles(q2), x4(xi + 6u)) + dot(hi_nibbles(q3), x4(xi + 7u));
  var xs = vec4<f32>(0.0);
  for (var i = 0u; i < 8u; i++) { xs += x4(xi + i); }
  s -= 8.0 * (xs.x + xs.y + xs.z + xs.w);
  return d * s;
}
