// weights/q6_K.dot: chunk_dot for one 32-element quarter (n, g) of a q6_K super-block, from registers;
// same contract as q4_0.dot (xc, xc_sum). The 6-bit q (low 4 bits from ql, high 2 from qh) is
// assembled four at a time in one word, widened with unpack4x8unorm, and the two scales (elements
// 0..15 and 16..31) apply to their halves: sum = d*sc * (255 * sum unorm(q)·xc - 32 * sum xc).

fn chunk_dot(row_byte: u32, c: u32) -> f32 {
  let o = row_byte + (c >> 3u) * 210u;
  let j = c & 7u;
  let n = j >> 2u;
  let g = j & 3u;
  let d = w_f16(o + 208u);
  let ql = o + 64u * n + 32u * (g & 1u);
  let qh = o + 128u + 32u * n;
  let scales = sbytes4_f32(w_u16(o + 192u + 8u * n + 2u * g));  // .x for elements 0..15, .y for 16..31
  let lshift = 4u * (g >> 1u);
  let hshift = 2u * g;
  let m4 = vec4<u32>(0x0f0f0f0fu);
  let m2 = vec4<u32>(0x03030303u);
  let q_lo = ((w_u32x4(ql) >> vec4<u32>(lshift)) & m4) | (((w_u32x4(qh) >> vec4<u32>(hshift)) & m2) << vec4<u32>(4u));
  let q_hi = ((w_u32x4(ql + 16u) >> vec4<u32>(lshift)) & m4) | (((w_u32x4(qh + 16u) >> vec4<u32>(hshift)) & m2) << vec4<u32>(4u));
  let lo = dot(unpack4x8unorm(q_lo.x), xc[0]) + dot(unpack4x8unorm(q_lo.y), xc[1])
         + dot(unpack4x8unorm(q_lo.z), xc[2]) + dot(unpack4x8unorm(q_lo.w), xc[3]);
  let hi = dot(unpack4x8unorm(q_hi.x), xc[4]) + dot(unpack4x8unorm(q_hi.y), xc[5])
         + dot(unpack4x8unorm(q_hi.z), xc[6]) + dot(unpack4x8unorm(q_hi.w), xc[7]);
  let xs_lo = dot(xc[0] + xc[1] + xc[2] + xc[3], vec4<f32>(1.0));
  let xs_hi = xc_sum - xs_lo;
  return d * (scales.x * (255.0 * lo - 32.0 * xs_lo) + scales.y * (255.0 * hi - 32.0 * xs_hi));
}
