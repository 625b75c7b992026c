// weights/generic.dot: chunk_dot through load_chunk, for formats without a register-only dot. Same
// contract as q4_0.dot: the kernel declares `var<private> xc: array<vec4<f32>, CHUNK_V4>` and xc_sum.

fn chunk_dot(row_byte: u32, c: u32) -> f32 {
  load_chunk(row_byte, c);
  var s = 0.0;
  for (var i = 0u; i < CHUNK_V4; i++) { s += dot(wq[i], xc[i]); }
  return s;
}
