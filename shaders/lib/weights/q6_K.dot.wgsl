// weights/q6_K.dot: chunk_dot for one 32-element quarter (n, g) of a q6_K super-block, from registers;
// same contract as q4_0.dot (xc, xc_sum). The 6-bit q (low 4 bits from ql, high 2 from qh) is
// assembled four at a time in one word, widened with unpack4x8unorm, and the two scales (elements
// 0..15 and 16..31) apply to their halves: sum = d*sc * (255 * sum unorm(q)·xc - 32 * sum xc).

fn chunk_dot(row_byte: u32, c: u32) -> f32 {
  let k = q6k_chunk(row_byte, c);  // lib/weights/q6_K.wgsl
  let q_lo = q6k_words(k, 0u);
  let q_hi = q6k_words(k, 16u);
  let lo = dot(unpack4x8unorm(q_lo.x), xc[0]) + dot(unpack4x8unorm(q_lo.y), xc[1])
         + dot(unpack4x8unorm(q_lo.z), xc[2]) + dot(unpack4x8unorm(q_lo.w), xc[3]);
  let hi = dot(unpack4x8unorm(q_hi.x), xc[4]) + dot(unpack4x8unorm(q_hi.y), xc[5])
         + dot(unpack4x8unorm(q_hi.z), xc[6]) + dot(unpack4x8unorm(q_hi.w), xc[7]);
  let xs_lo = dot(xc[0] + xc[1] + xc[2] + xc[3], vec4<f32>(1.0));
  let xs_hi = xc_sum - xs_lo;
  return k.d * (k.scales.x * (255.0 * lo - 32.0 * xs_lo) + k.scales.y * (255.0 * hi - 32.0 * xs_hi));
}
