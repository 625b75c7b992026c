// weights/q8_0.dot: chunk_dot for one q8_0 block (34 bytes: f16 d, 32 × i8), from registers.
// The joining kernel defines `fn x4(i: u32) -> vec4<f32>`.

fn chunk_dot(row_byte: u32, c: u32, xi: u32) -> f32 {
  let o = row_byte + c * 34u;
  let wi = o >> 2u;
  let odd = (o & 2u) != 0u;
  let d = unpack2x16float(select(w[wi], w[wi] >> 16u, odd)).x;
  var s = 0.0;
  var prev = w[wi];
  for (var i = 0u; i < 8u; i++) {
    let next = w[wi + 1u + i];
    let q = select((prev >> 16u) | (next << 16u), next, odd);
    s += dot(sbytes4_f32(q), x4(xi + i));
    prev = next;
  }
  return d * s;
}
