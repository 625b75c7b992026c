// weights/vec4.multi: chunk_dot4(row_byte, c) for the float formats (f32, f16, bf16), whose chunk is one
// vec4: the format's load_chunk, then its dots with the vectors' x (lib/weights/multi.wgsl).

fn chunk_dot4(row_byte: u32, c: u32) -> vec4<f32> {
  load_chunk(row_byte, c);
  return dot_cols(wq[0], xm[0]);
}
