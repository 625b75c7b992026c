// lib/bytes: reads from a weight tensor stored as raw ggml bytes in `w: array<u32>`.
// Block sizes of 18, 34 and 210 bytes leave blocks 2-byte aligned only, so 32-bit reads at an even
// byte offset may straddle two words. Joined by every kernel that reads weights; the kernel declares
// `w`.

// The u16 at even byte offset `b`.
fn w_u16(b: u32) -> u32 {
  return (w[b >> 2u] >> ((b & 2u) * 8u)) & 0xffffu;
}

// The u32 at even byte offset `b` (little endian), possibly straddling two words.
fn w_u32(b: u32) -> u32 {
  let i = b >> 2u;
  if ((b & 2u) == 0u) { return w[i]; }
  return (w[i] >> 16u) | (w[i + 1u] << 16u);
}

// The four u32 at even byte offset `b` (16 bytes), from five aligned loads and no branch.
fn w_u32x4(b: u32) -> vec4<u32> {
  let i = b >> 2u;
  let a = vec4<u32>(w[i], w[i + 1u], w[i + 2u], w[i + 3u]);
  let n = vec4<u32>(a.yzw, w[i + 4u]);
  return select(a, (a >> vec4<u32>(16u)) | (n << vec4<u32>(16u)), (b & 2u) != 0u);
}

// The f16 at even byte offset `b`, as f32 (exact).
fn w_f16(b: u32) -> f32 {
  return unpack2x16float(w_u16(b)).x;
}

// Four unsigned bytes of a word, as f32.
fn bytes4_f32(q: u32) -> vec4<f32> {
  return vec4<f32>(vec4<u32>(q & 0xffu, (q >> 8u) & 0xffu, (q >> 16u) & 0xffu, q >> 24u));
}

// Four signed bytes of a word, as f32.
fn sbytes4_f32(q: u32) -> vec4<f32> {
  let s = bitcast<i32>(q);
  return vec4<f32>(vec4<i32>(extractBits(s, 0u, 8u), extractBits(s, 8u, 8u), extractBits(s, 16u, 8u), extractBits(s, 24u, 8u)));
}

// Low and high nibbles of the four bytes of a word.
fn lo_nibbles(q: u32) -> vec4<f32> { return bytes4_f32(q & 0x0f0f0f0fu); }
fn hi_nibbles(q: u32) -> vec4<f32> { return bytes4_f32((q >> 4u) & 0x0f0f0f0fu); }

// Blocks that open with an f16 scale at an even byte offset `o`, followed by their quant bytes (q4_0:
// 16, q8_0: 32). Blocks of 18 and 34 bytes start either word-aligned or mid-word, so the quant words are
// funnel-shifted from one load per word, without a branch.
struct ScaledBlock16 { d: f32, q: vec4<u32> }
struct ScaledBlock32 { d: f32, lo: vec4<u32>, hi: vec4<u32> }

// Words a (starting at the scale's word) shifted to start 2 bytes later when `odd`, else the next words n.
fn w_after_half(a: vec4<u32>, n: vec4<u32>, odd: bool) -> vec4<u32> {
  return select((a >> vec4<u32>(16u)) | (n << vec4<u32>(16u)), n, odd);
}

// The scale and the 16 quant bytes of the block at `o` (five loads).
fn w_scaled_block16(o: u32) -> ScaledBlock16 {
  let i = o >> 2u;
  let odd = (o & 2u) != 0u;  // the block starts mid-word: the scale is the high half, the quants word aligned
  let a = vec4<u32>(w[i], w[i + 1u], w[i + 2u], w[i + 3u]);
  let n = vec4<u32>(a.yzw, w[i + 4u]);
  return ScaledBlock16(unpack2x16float(select(a.x, a.x >> 16u, odd)).x, w_after_half(a, n, odd));
}

// The scale and the 32 quant bytes of the block at `o` (nine loads).
fn w_scaled_block32(o: u32) -> ScaledBlock32 {
  let i = o >> 2u;
  let odd = (o & 2u) != 0u;
  let a = vec4<u32>(w[i], w[i + 1u], w[i + 2u], w[i + 3u]);
  let b = vec4<u32>(w[i + 4u], w[i + 5u], w[i + 6u], w[i + 7u]);
  let e = w[i + 8u];
  let d = unpack2x16float(select(a.x, a.x >> 16u, odd)).x;
  return ScaledBlock32(d, w_after_half(a, vec4<u32>(a.yzw, b.x), odd), w_after_half(b, vec4<u32>(b.yzw, e), odd));
}
