// weights/q4_0: blocks of 32 = f16 d + 16 bytes of nibbles (18 bytes); element j < 16 is the low
// nibble of byte j, element j + 16 its high nibble; x = d * (q - 8). A chunk is one block.
const CHUNK: u32 = 32u;
const CHUNK_V4: u32 = 8u;
var<private> wq: array<vec4<f32>, 8>;

fn load_chunk(row_byte: u32, c: u32) {
  let o = row_byte + c * 18u;
  let d = w_f16(o);
  for (var i = 0u; i < 4u; i++) {
    let q = w_u32(o + 2u + 4u * i);
    wq[i] = (lo_nibbles(q) - 8.0) * d;
    wq[i + 4u] = (hi_nibbles(q) - 8.0) * d;
  }
}
