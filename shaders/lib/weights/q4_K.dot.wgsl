// weights/q4_K.dot: chunk_dot for one 32-element sub-block j of a q4_K super-block, from registers;
// same contract as q4_0.dot (xc, xc_sum). x = (d*sc_j) q - (dmin*m_j), so
// sum x·xc = (d*sc_j) * 255 * sum unorm(q)·xc - (dmin*m_j) * sum xc.

fn chunk_dot(row_byte: u32, c: u32) -> f32 {
  let o = row_byte + (c >> 3u) * 144u;
  let j = c & 7u;
  let wi = o >> 2u;
  let dd = unpack2x16float(w[wi]);  // (d, dmin)
  let sm = q4k_scale_min(wi, j);  // (sc_j, m_j)
  let qs = q4k_quants(wi, j);
  let qa = qs.a;
  let qb = qs.b;
  let s = dot(unpack4x8unorm(qa.x), xc[0]) + dot(unpack4x8unorm(qa.y), xc[1])
        + dot(unpack4x8unorm(qa.z), xc[2]) + dot(unpack4x8unorm(qa.w), xc[3])
        + dot(unpack4x8unorm(qb.x), xc[4]) + dot(unpack4x8unorm(qb.y), xc[5])
        + dot(unpack4x8unorm(qb.z), xc[6]) + dot(unpack4x8unorm(qb.w), xc[7]);
  return dd.x * f32(sm.x) * 255.0 * s - dd.y * f32(sm.y) * xc_sum;
}
