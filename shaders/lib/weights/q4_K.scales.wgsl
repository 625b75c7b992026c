// weights/q4_K.scales: the scale and min of a q4_K sub-block, shared by every q4_K lib (q4_K.wgsl, its dot,
// gemm and multi variants), and its quants as words (the dot and multi variants; the gemm variant shifts word
// by word, which measured ~3% faster there on SwiftShader). The 12 bytes after (d, dmin) pack eight 6-bit
// scales and mins: sub-block j < 4 takes bytes j and j + 4; j ≥ 4 takes the nibbles of byte j + 4 and the top
// 2 bits of bytes j - 4 and j (llama.cpp's get_scale_min_k4).

// (sc_j, m_j) of sub-block j of the super-block at word `wi` (super-blocks are 144 bytes: word aligned).
fn q4k_scale_min(wi: u32, j: u32) -> vec2<u32> {
  let lo = 8u * (j & 3u);
  let b_j = (w[wi + 1u] >> lo) & 0xffu;   // byte j % 4
  let b_j4 = (w[wi + 2u] >> lo) & 0xffu;  // byte 4 + j % 4
  if (j < 4u) { return vec2<u32>(b_j & 63u, b_j4 & 63u); }
  let b_j8 = (w[wi + 3u] >> lo) & 0xffu;  // byte 8 + j % 4
  return vec2<u32>((b_j8 & 0xfu) | ((b_j >> 6u) << 4u), (b_j8 >> 4u) | ((b_j4 >> 6u) << 4u));
}

// The 32 4-bit quants of sub-block j of the super-block at word `wi`, one per byte of 8 words: sub-blocks 2i and
// 2i + 1 share 32 bytes (low and high nibbles).
struct Q4kQuants { a: vec4<u32>, b: vec4<u32> }

fn q4k_quants(wi: u32, j: u32) -> Q4kQuants {
  let q = wi + 4u + (j >> 1u) * 8u;
  let sh = vec4<u32>((j & 1u) * 4u);
  let mk = vec4<u32>(0x0f0f0f0fu);
  return Q4kQuants((vec4<u32>(w[q], w[q + 1u], w[q + 2u], w[q + 3u]) >> sh) & mk,
                   (vec4<u32>(w[q + 4u], w[q + 5u], w[q + 6u], w[q + 7u]) >> sh) & mk);
}
