// weights/q8_0.multi: chunk_dot4 for one q8_0 block (lib/weights/multi.wgsl: xm, xs). Signed bytes are
// biased to unsigned (q ^ 0x80 = q + 128) and widened once with unpack4x8unorm, then dotted with every
// vector: sum q d x = d * (255 * sum unorm(q + 128) x - 128 * sum x), as in q8_0.dot.

fn chunk_dot4(row_byte: u32, c: u32) -> vec4<f32> {
  let blk = w_scaled_block32(row_byte + c * 34u);
  let b = 0x80808080u;
  let s = dot_cols(unpack4x8unorm(blk.lo.x ^ b), xm[0]) + dot_cols(unpack4x8unorm(blk.lo.y ^ b), xm[1])
        + dot_cols(unpack4x8unorm(blk.lo.z ^ b), xm[2]) + dot_cols(unpack4x8unorm(blk.lo.w ^ b), xm[3])
        + dot_cols(unpack4x8unorm(blk.hi.x ^ b), xm[4]) + dot_cols(unpack4x8unorm(blk.hi.y ^ b), xm[5])
        + dot_cols(unpack4x8unorm(blk.hi.z ^ b), xm[6]) + dot_cols(unpack4x8unorm(blk.hi.w ^ b), xm[7]);
  return blk.d * (255.0 * s - 128.0 * xs);
}
