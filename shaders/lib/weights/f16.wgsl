// weights/f16: row-major IEEE half, two per u32 (no shader-f16 needed). A chunk is 4 elements; K % 4 == 0.
const CHUNK: u32 = 4u;
const CHUNK_V4: u32 = 1u;
var<private> wq: array<vec4<f32>, 1>;

fn load_chunk(row_byte: u32, c: u32) {
  let i = (row_byte >> 2u) + c * 2u;
  wq[0] = vec4<f32>(unpack2x16float(w[i]), unpack2x16float(w[i + 1u]));
}
