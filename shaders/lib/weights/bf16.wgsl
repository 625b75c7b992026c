// weights/bf16: row-major bfloat16 (the top half of an f32), two per u32. A chunk is 4 elements; K % 4 == 0.
const CHUNK: u32 = 4u;
const CHUNK_V4: u32 = 1u;
var<private> wq: array<vec4<f32>, 1>;

fn load_chunk(row_byte: u32, c: u32) {
  let i = (row_byte >> 2u) + c * 2u;
  let a = w[i];
  let b = w[i + 1u];
  wq[0] = vec4<f32>(bitcast<f32>(a << 16u), bitcast<f32>(a & 0xffff0000u), bitcast<f32>(b << 16u), bitcast<f32>(b & 0xffff0000u));
}
