// weights/q4_K.multi: chunk_dot4 for one 32-element sub-block j of a q4_K super-block against up to 4
// vectors (lib/weights/multi.wgsl: xm, xs). The scale and min are decoded and the nibbles widened once
// (as in q4_K.gemm.wgsl), then x = (d sc_j) q - dmin m_j gives
// sum x·xv = (255 d sc_j) * sum unorm(q)·xv - (dmin m_j) * sum xv for every vector v.

fn chunk_dot4(row_byte: u32, c: u32) -> vec4<f32> {
  let wi = (row_byte >> 2u) + (c >> 3u) * 36u;
  let j = c & 7u;
  let dd = unpack2x16float(w[wi]);  // (d, dmin)
  let sm = q4k_scale_min(wi, j);  // (sc_j, m_j)
  let qs = q4k_quants(wi, j);
  let qa = qs.a;
  let qb = qs.b;
  let s = dot_cols(unpack4x8unorm(qa.x), xm[0]) + dot_cols(unpack4x8unorm(qa.y), xm[1])
        + dot_cols(unpack4x8unorm(qa.z), xm[2]) + dot_cols(unpack4x8unorm(qa.w), xm[3])
        + dot_cols(unpack4x8unorm(qb.x), xm[4]) + dot_cols(unpack4x8unorm(qb.y), xm[5])
        + dot_cols(unpack4x8unorm(qb.z), xm[6]) + dot_cols(unpack4x8unorm(qb.w), xm[7]);
  return (255.0 * dd.x * f32(sm.x)) * s - (dd.y * f32(sm.y)) * xs;
}
