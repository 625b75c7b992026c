// weights/q4_K.scales: the scale and min of a q4_K sub-block, shared by every q4_K lib (q4_K.wgsl, its dot,
// gemm and multi variants). The 12 bytes after (d, dmin) pack eight 6-bit scales and mins: sub-block
// j < 4 takes bytes j and j + 4; j ≥ 4 takes the nibbles of byte j + 4 and the top 2 bits of bytes j - 4
// and j (llama.cpp's get_scale_min_k4).

// (sc_j, m_j) of sub-block j of the super-block at word `wi` (super-blocks are 144 bytes: word aligned).
fn q4k_scale_min(wi: u32, j: u32) -> vec2<u32> {
  let lo = 8u * (j & 3u);
  let b_j = (w[wi + 1u] >> lo) & 0xffu;   // byte j % 4
  let b_j4 = (w[wi + 2u] >> lo) & 0xffu;  // byte 4 + j % 4
  if (j < 4u) { return vec2<u32>(b_j & 63u, b_j4 & 63u); }
  let b_j8 = (w[wi + 3u] >> lo) & 0xffu;  // byte 8 + j % 4
  return vec2<u32>((b_j8 & 0xfu) | ((b_j >> 6u) << 4u), (b_j8 >> 4u) | ((b_j4 >> 6u) << 4u));
}
