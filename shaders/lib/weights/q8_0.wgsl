// weights/q8_0: blocks of 32 = f16 d + 32 × i8 q (34 bytes); x = d * q. A chunk is one block.
const CHUNK: u32 = 32u;
const CHUNK_V4: u32 = 8u;
var<private> wq: array<vec4<f32>, 8>;

fn load_chunk(row_byte: u32, c: u32) {
  let o = row_byte + c * 34u;
  let d = w_f16(o);
  for (var i = 0u; i < 8u; i++) {
    wq[i] = sbytes4_f32(w_u32(o + 2u + 4u * i)) * d;
  }
}
