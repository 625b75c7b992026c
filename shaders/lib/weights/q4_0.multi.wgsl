// weights/q4_0.multi: chunk_dot4(row_byte, c) = the dots of one q4_0 block with the x chunks of up to 4
// vectors (lib/weights/multi.wgsl: xm, xs). Each word of nibbles is widened once (unpack4x8unorm, q / 255)
// and dotted with every vector, 255 and the -8 offset folded into the end as in q4_0.dot:
// sum (q - 8) d x = d * (255 * sum unorm(q) x - 8 * sum x).

fn chunk_dot4(row_byte: u32, c: u32) -> vec4<f32> {
  let blk = w_scaled_block16(row_byte + c * 18u);
  let q0 = blk.q.x; let q1 = blk.q.y; let q2 = blk.q.z; let q3 = blk.q.w;
  let m = 0x0f0f0f0fu;
  let s = dot_cols(unpack4x8unorm(q0 & m), xm[0]) + dot_cols(unpack4x8unorm(q1 & m), xm[1])
        + dot_cols(unpack4x8unorm(q2 & m), xm[2]) + dot_cols(unpack4x8unorm(q3 & m), xm[3])
        + dot_cols(unpack4x8unorm((q0 >> 4u) & m), xm[4]) + dot_cols(unpack4x8unorm((q1 >> 4u) & m), xm[5])
        + dot_cols(unpack4x8unorm((q2 >> 4u) & m), xm[6]) + dot_cols(unpack4x8unorm((q3 >> 4u) & m), xm[7]);
  return blk.d * (255.0 * s - 8.0 * xs);
}
