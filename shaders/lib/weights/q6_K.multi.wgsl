// weights/q6_K.multi: chunk_dot4 for one 32-element quarter (n, g) of a q6_K super-block against up to 4
// vectors (lib/weights/multi.wgsl: xm, xs, xs_lo). The 6-bit q are assembled and widened once (as in
// q6_K.dot.wgsl), and the two scales (elements 0..15, 16..31) apply to their halves:
// sum = d*sc * (255 * sum unorm(q)·xv - 32 * sum xv) per half, for every vector v.

fn chunk_dot4(row_byte: u32, c: u32) -> vec4<f32> {
  let o = row_byte + (c >> 3u) * 210u;
  let j = c & 7u;
  let n = j >> 2u;
  let g = j & 3u;
  let d = w_f16(o + 208u);
  let ql = o + 64u * n + 32u * (g & 1u);
  let qh = o + 128u + 32u * n;
  let scales = d * sbytes4_f32(w_u16(o + 192u + 8u * n + 2u * g));  // .x for elements 0..15, .y for 16..31
  let lshift = vec4<u32>(4u * (g >> 1u));
  let hshift = vec4<u32>(2u * g);
  let m4 = vec4<u32>(0x0f0f0f0fu);
  let m2 = vec4<u32>(0x03030303u);
  let q_lo = ((w_u32x4(ql) >> lshift) & m4) | (((w_u32x4(qh) >> hshift) & m2) << vec4<u32>(4u));
  let q_hi = ((w_u32x4(ql + 16u) >> lshift) & m4) | (((w_u32x4(qh + 16u) >> hshift) & m2) << vec4<u32>(4u));
  let s_lo = dot_cols(unpack4x8unorm(q_lo.x), xm[0]) + dot_cols(unpack4x8unorm(q_lo.y), xm[1])
           + dot_cols(unpack4x8unorm(q_lo.z), xm[2]) + dot_cols(unpack4x8unorm(q_lo.w), xm[3]);
  let s_hi = dot_cols(unpack4x8unorm(q_hi.x), xm[4]) + dot_cols(unpack4x8unorm(q_hi.y), xm[5])
           + dot_cols(unpack4x8unorm(q_hi.z), xm[6]) + dot_cols(unpack4x8unorm(q_hi.w), xm[7]);
  return scales.x * (255.0 * s_lo - 32.0 * xs_lo) + scales.y * (255.0 * s_hi - 32.0 * (xs - xs_lo));
}
