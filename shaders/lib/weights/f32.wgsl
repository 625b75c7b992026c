// weights/f32: row-major f32. A chunk is 4 elements (one vec4); rows must be 16-byte aligned (K % 4 == 0).
const CHUNK: u32 = 4u;
const CHUNK_V4: u32 = 1u;
var<private> wq: array<vec4<f32>, 1>;

fn load_chunk(row_byte: u32, c: u32) {
  let i = (row_byte >> 2u) + c * 4u;
  wq[0] = vec4<f32>(bitcast<f32>(w[i]), bitcast<f32>(w[i + 1u]), bitcast<f32>(w[i + 2u]), bitcast<f32>(w[i + 3u]));
}
