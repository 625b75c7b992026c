// weights/q6_K.multi: chunk_dot4 for one 32-element quarter (n, g) of a q6_K super-block against up to 4
// vectors (lib/weights/multi.wgsl: xm, xs, xs_lo). The 6-bit q are assembled and widened once (as in
// q6_K.dot.wgsl), and the two scales (elements 0..15, 16..31) apply to their halves:
// sum = d*sc * (255 * sum unorm(q)·xv - 32 * sum xv) per half, for every vector v.

fn chunk_dot4(row_byte: u32, c: u32) -> vec4<f32> {
  let k = q6k_chunk(row_byte, c);  // lib/weights/q6_K.wgsl
  let scales = k.d * k.scales;  // .x for elements 0..15, .y for 16..31
  let q_lo = q6k_words(k, 0u);
  let q_hi = q6k_words(k, 16u);
  let s_lo = dot_cols(unpack4x8unorm(q_lo.x), xm[0]) + dot_cols(unpack4x8unorm(q_lo.y), xm[1])
           + dot_cols(unpack4x8unorm(q_lo.z), xm[2]) + dot_cols(unpack4x8unorm(q_lo.w), xm[3]);
  let s_hi = dot_cols(unpack4x8unorm(q_hi.x), xm[4]) + dot_cols(unpack4x8unorm(q_hi.y), xm[5])
           + dot_cols(unpack4x8unorm(q_hi.z), xm[6]) + dot_cols(unpack4x8unorm(q_hi.w), xm[7]);
  return scales.x * (255.0 * s_lo - 32.0 * xs_lo) + scales.y * (255.0 * s_hi - 32.0 * (xs - xs_lo));
}
