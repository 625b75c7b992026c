// weights/q4_K: super-blocks of 256 = f16 d, f16 dmin, 12 bytes of 6-bit scales and mins, 128 bytes of
// nibbles (144 bytes). Sub-block j (32 elements) takes the low (j even) or high (j odd) nibbles of
// bytes 32*(j/2) .. +32; x = (d * sc_j) * q - (dmin * m_j). A chunk is one sub-block of 32.
const CHUNK: u32 = 32u;
const CHUNK_V4: u32 = 8u;
var<private> wq: array<vec4<f32>, 8>;

// Byte `i` (0..11) of the packed scales at byte offset `s`.
fn q4k_scale_byte(s: u32, i: u32) -> u32 {
  return (w[(s + i) >> 2u] >> (((s + i) & 3u) * 8u)) & 0xffu;
}

fn load_chunk(row_byte: u32, c: u32) {
  let o = row_byte + (c >> 3u) * 144u;
  let j = c & 7u;
  let dd = unpack2x16float(w[o >> 2u]);  // (d, dmin)
  let s = o + 4u;
  var sc: u32;
  var m: u32;
  if (j < 4u) {
    sc = q4k_scale_byte(s, j) & 63u;
    m = q4k_scale_byte(s, j + 4u) & 63u;
  } else {
    sc = (q4k_scale_byte(s, j + 4u) & 0xfu) | ((q4k_scale_byte(s, j - 4u) >> 6u) << 4u);
    m = (q4k_scale_byte(s, j + 4u) >> 4u) | ((q4k_scale_byte(s, j) >> 6u) << 4u);
  }
  let d1 = dd.x * f32(sc);
  let m1 = dd.y * f32(m);
  let q0 = ((o + 16u) >> 2u) + (j >> 1u) * 8u;
  let shift = (j & 1u) * 4u;
  for (var i = 0u; i < 8u; i++) {
    let q = bytes4_f32((w[q0 + i] >> shift) & 0x0f0f0f0fu);
    wq[i] = d1 * q - m1;
  }
}
