// weights/generic.dot: chunk_dot through load_chunk, for formats without a register-only dot.
// The joining kernel defines `fn x4(i: u32) -> vec4<f32>`.

fn chunk_dot(row_byte: u32, c: u32, xi: u32) -> f32 {
  load_chunk(row_byte, c);
  var s = 0.0;
  for (var i = 0u; i < CHUNK_V4; i++) { s += dot(wq[i], x4(xi + i)); }
  return s;
}
