// weights/q8_0.dot: chunk_dot for one q8_0 block (34 bytes: f16 d, 32 × i8), from registers; same
// contract as q4_0.dot (xc, xc_sum). Signed bytes are biased to unsigned (q ^ 0x80 = q + 128) so one
// unpack4x8unorm widens four: sum q x = 255 * sum unorm(q + 128) x - 128 * sum x.

// Four signed bytes biased to unsigned and widened: unorm(q + 128).
fn q8_0_widen(q: u32) -> vec4<f32> {
  return unpack4x8unorm(q ^ 0x80808080u);
}

fn chunk_dot(row_byte: u32, c: u32) -> f32 {
  let blk = w_scaled_block32(row_byte + c * 34u);
  let s = dot(q8_0_widen(blk.lo.x), xc[0]) + dot(q8_0_widen(blk.lo.y), xc[1])
        + dot(q8_0_widen(blk.lo.z), xc[2]) + dot(q8_0_widen(blk.lo.w), xc[3])
        + dot(q8_0_widen(blk.hi.x), xc[4]) + dot(q8_0_widen(blk.hi.y), xc[5])
        + dot(q8_0_widen(blk.hi.z), xc[6]) + dot(q8_0_widen(blk.hi.w), xc[7]);
  return blk.d * (255.0 * s - 128.0 * xc_sum);
}
