// weights/q4_K: super-blocks of 256 = f16 d, f16 dmin, 12 bytes of 6-bit scales and mins, 128 bytes of
// nibbles (144 bytes). Sub-block j (32 elements) takes the low (j even) or high (j odd) nibbles of
// bytes 32*(j/2) .. +32; x = (d * sc_j) * q - (dmin * m_j). A chunk is one sub-block of 32.
const CHUNK: u32 = 32u;
const CHUNK_V4: u32 = 8u;
var<private> wq: array<vec4<f32>, 8>;

// The scales and mins: lib/weights/q4_K.scales.wgsl (joined before this by the wrapper).

fn load_chunk(row_byte: u32, c: u32) {
  let o = row_byte + (c >> 3u) * 144u;
  let j = c & 7u;
  let dd = unpack2x16float(w[o >> 2u]);  // (d, dmin)
  let sm = q4k_scale_min(o >> 2u, j);
  let d1 = dd.x * f32(sm.x);
  let m1 = dd.y * f32(sm.y);
  let q0 = ((o + 16u) >> 2u) + (j >> 1u) * 8u;
  let shift = (j & 1u) * 4u;
  for (var i = 0u; i < 8u; i++) {
    let q = bytes4_f32((w[q0 + i] >> shift) & 0x0f0f0f0fu);
    wq[i] = d1 * q - m1;
  }
}
