// weights/vec4.dot: chunk_dot for the float formats (f32, f16, bf16), whose chunk is one vec4: the
// format's load_chunk, then one dot with xc[0]. Same contract as q4_0.dot (the kernel declares xc).

fn chunk_dot(row_byte: u32, c: u32) -> f32 {
  load_chunk(row_byte, c);
  return dot(wq[0], xc[0]);
}
