// weights/q4_0.dot: chunk_dot(row_byte, c) = sum_j W[row, 32c + j] * xc[j] for one q4_0 block, from
// registers. The joining kernel declares `var<private> xc: array<vec4<f32>, 8>` (the x chunk,
// loaded once and reused for several rows) and `var<private> xc_sum: f32` (its sum).
// Nibbles are widened with unpack4x8unorm (q / 255, one instruction on most targets) and 255 is folded
// into d, then sum (q - 8) x = 255 * d * sum unorm(q) x - 8 d * sum x.

fn chunk_dot(row_byte: u32, c: u32) -> f32 {
  let blk = w_scaled_block16(row_byte + c * 18u);
  let d = blk.d;
  let q0 = blk.q.x; let q1 = blk.q.y; let q2 = blk.q.z; let q3 = blk.q.w;
  let m = 0x0f0f0f0fu;
  let s = dot(unpack4x8unorm(q0 & m), xc[0]) + dot(unpack4x8unorm(q1 & m), xc[1])
        + dot(unpack4x8unorm(q2 & m), xc[2]) + dot(unpack4x8unorm(q3 & m), xc[3])
        + dot(unpack4x8unorm((q0 >> 4u) & m), xc[4]) + dot(unpack4x8unorm((q1 >> 4u) & m), xc[5])
        + dot(unpack4x8unorm((q2 >> 4u) & m), xc[6]) + dot(unpack4x8unorm((q3 >> 4u) & m), xc[7]);
  return d * (255.0 * s - 8.0 * xc_sum);
}
