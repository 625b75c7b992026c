// gemm.rows: y[t, n] (+)= sum_k W[n, k] * x[t, k] (+ bias[n])     (barrier-free GEMM)
//   W: rows [row0, row0 + rows) of an (N, K) weight in any ggml format, raw bytes as u32
//      (joined with lib/bytes.wgsl and a load_chunk lib: lib/weights/<dtype>.gemm.wgsl or <dtype>.wgsl)
//   x: (T, K) f32, read as vec4      y: (T, N) f32      bias: (N) f32 when HAS_BIAS
// One invocation owns 8 consecutive weight rows × 8 consecutive tokens and walks all of K itself in
// steps of 32 elements, with the 8 × 8 sums in registers (acc[2r + g] holds row r, tokens 4g..4g+3):
// each weight step is dequantized once and reused for the 8 tokens, each x vec4 is loaded once and
// reused for the 8 rows (acc += w · mat4x4(x of 4 tokens)). No workgroup memory and no barrier: the
// variant for software adapters (SwiftShader runs invocations as 4-wide SIMD lanes in coroutines and
// pays a switch per lane group at every barrier); gemm.wgsl, the tiled variant, suits real GPUs.
// The 8 × 8 tile is written out, not looped over override constants: SwiftShader does not unroll
// loops, and a private array indexed by a loop counter lives in memory, which made it ~5x slower.
// Rows past the part and tokens past T repeat the last valid one and are never written; for the
// 4-element-chunk formats (f32, f16, bf16) a K % 32 tail is done one vec4 at a time.
// ACCUMULATE adds into y (the residual stream). ACT 1 applies GELU with erf after the bias (lib/gelu-erf.wgsl), ACT 2
// tanh of the input clamped to ±15 (a reranker head's dense layer; some backends' tanh overflows past that).

override WG_SIZE: u32 = 64u;
override HAS_BIAS: bool = false;
override ACCUMULATE: bool = false;
override ACT: u32 = 0u;  // 0: none; 1: y = gelu_erf(W x + bias); 2: y = tanh(W x + bias)

const ROWS: u32 = 8u;    // rows per invocation
const TOKENS: u32 = 8u;  // tokens per invocation (and per workgroup)
const STEP_CHUNKS: u32 = 8u / CHUNK_V4;  // chunks per 32-element step: 1 (block formats) or 8 (f32, f16, bf16)

// Params and bindings (p, w, x, y, bias): lib/matmul-io.wgsl, joined by the wrapper.

var<private> acc: array<vec4<f32>, 16>;     // [2r + g]: row r, tokens 4g .. 4g + 3
var<private> xbase: array<u32, 8>;          // vec4 index of x[token t, 0]

// The 32 dequantized weights of step s (elements 32s .. 32s + 31) of the row at row_byte.
fn load_step(row_byte: u32, s: u32) -> array<vec4<f32>, 8> {
  if (CHUNK_V4 == 8u) {
    load_chunk(row_byte, s);
    let l = CHUNK_V4 - 1u;  // the min()s keep 4-element formats compiling; this branch is not theirs
    return array<vec4<f32>, 8>(wq[0], wq[min(1u, l)], wq[min(2u, l)], wq[min(3u, l)],
                               wq[min(4u, l)], wq[min(5u, l)], wq[min(6u, l)], wq[min(7u, l)]);
  }
  let c = s * STEP_CHUNKS;
  load_chunk(row_byte, c); let v0 = wq[0];
  load_chunk(row_byte, c + 1u); let v1 = wq[0];
  load_chunk(row_byte, c + 2u); let v2 = wq[0];
  load_chunk(row_byte, c + 3u); let v3 = wq[0];
  load_chunk(row_byte, c + 4u); let v4 = wq[0];
  load_chunk(row_byte, c + 5u); let v5 = wq[0];
  load_chunk(row_byte, c + 6u); let v6 = wq[0];
  load_chunk(row_byte, c + 7u); let v7 = wq[0];
  return array<vec4<f32>, 8>(v0, v1, v2, v3, v4, v5, v6, v7);
}

// x[tokens 4g .. 4g + 3, vec4 e] as the columns of a matrix, so that w * m dots w with each token.
fn x_mat(g: u32, e: u32) -> mat4x4<f32> {
  return mat4x4<f32>(x[xbase[4u * g] + e], x[xbase[4u * g + 1u] + e], x[xbase[4u * g + 2u] + e], x[xbase[4u * g + 3u] + e]);
}

// One vec4 of K: the 8 rows' weights r0..r7 against the 8 tokens' x at vec4 e.
fn mac(e: u32, r0: vec4<f32>, r1: vec4<f32>, r2: vec4<f32>, r3: vec4<f32>,
       r4: vec4<f32>, r5: vec4<f32>, r6: vec4<f32>, r7: vec4<f32>) {
  let xa = x_mat(0u, e);
  let xb = x_mat(1u, e);
  acc[0] += r0 * xa; acc[1] += r0 * xb;
  acc[2] += r1 * xa; acc[3] += r1 * xb;
  acc[4] += r2 * xa; acc[5] += r2 * xb;
  acc[6] += r3 * xa; acc[7] += r3 * xb;
  acc[8] += r4 * xa; acc[9] += r4 * xb;
  acc[10] += r5 * xa; acc[11] += r5 * xb;
  acc[12] += r6 * xa; acc[13] += r6 * xb;
  acc[14] += r7 * xa; acc[15] += r7 * xb;
}

// y[t0 .. t0 + 8, local_row] from a row's two accumulators, skipping tokens past T.
fn store_row(local_row: u32, t0: u32, lo: vec4<f32>, hi: vec4<f32>) {
  let row = p.row0 + local_row;
  var b = 0.0;
  if (HAS_BIAS) { b = bias[row]; }
  for (var t = 0u; t < TOKENS; t++) {
    let tok = t0 + t;
    if (tok >= p.t) { break; }
    let yi = tok * p.n + row;
    var v = select(hi[t & 3u], lo[t & 3u], t < 4u) + b;
    if (ACCUMULATE) { v += y[yi]; }
    if (ACT == 1u) { v = gelu_erf(v); }
    if (ACT == 2u) { v = tanh(clamp(v, -15.0, 15.0)); }
    y[yi] = v;
  }
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let first = (wid.x * WG_SIZE + lid) * ROWS;  // first local row
  if (first >= p.rows) { return; }
  let last = min(first + ROWS, p.rows) - 1u;
  let t0 = wid.y * TOKENS;
  let t_last = min(t0 + TOKENS, p.t) - 1u;
  let k4 = p.k / 4u;
  xbase[0] = t0 * k4;
  xbase[1] = min(t0 + 1u, t_last) * k4;
  xbase[2] = min(t0 + 2u, t_last) * k4;
  xbase[3] = min(t0 + 3u, t_last) * k4;
  xbase[4] = min(t0 + 4u, t_last) * k4;
  xbase[5] = min(t0 + 5u, t_last) * k4;
  xbase[6] = min(t0 + 6u, t_last) * k4;
  xbase[7] = min(t0 + 7u, t_last) * k4;
  let rb0 = first * p.row_bytes;
  let rb1 = min(first + 1u, last) * p.row_bytes;
  let rb2 = min(first + 2u, last) * p.row_bytes;
  let rb3 = min(first + 3u, last) * p.row_bytes;
  let rb4 = min(first + 4u, last) * p.row_bytes;
  let rb5 = min(first + 5u, last) * p.row_bytes;
  let rb6 = min(first + 6u, last) * p.row_bytes;
  let rb7 = min(first + 7u, last) * p.row_bytes;

  let steps = p.k / 32u;
  for (var s = 0u; s < steps; s++) {
    let a = load_step(rb0, s); let b = load_step(rb1, s); let c = load_step(rb2, s); let d = load_step(rb3, s);
    let e = load_step(rb4, s); let f = load_step(rb5, s); let g = load_step(rb6, s); let h = load_step(rb7, s);
    let x0 = s * 8u;
    mac(x0, a[0], b[0], c[0], d[0], e[0], f[0], g[0], h[0]);
    mac(x0 + 1u, a[1], b[1], c[1], d[1], e[1], f[1], g[1], h[1]);
    mac(x0 + 2u, a[2], b[2], c[2], d[2], e[2], f[2], g[2], h[2]);
    mac(x0 + 3u, a[3], b[3], c[3], d[3], e[3], f[3], g[3], h[3]);
    mac(x0 + 4u, a[4], b[4], c[4], d[4], e[4], f[4], g[4], h[4]);
    mac(x0 + 5u, a[5], b[5], c[5], d[5], e[5], f[5], g[5], h[5]);
    mac(x0 + 6u, a[6], b[6], c[6], d[6], e[6], f[6], g[6], h[6]);
    mac(x0 + 7u, a[7], b[7], c[7], d[7], e[7], f[7], g[7], h[7]);
  }
  // K % 32 tail, only for 4-element chunks (chunk index == vec4 index there).
  for (var v = steps * 8u; v < k4; v++) {
    load_chunk(rb0, v); let a = wq[0]; load_chunk(rb1, v); let b = wq[0];
    load_chunk(rb2, v); let c = wq[0]; load_chunk(rb3, v); let d = wq[0];
    load_chunk(rb4, v); let e = wq[0]; load_chunk(rb5, v); let f = wq[0];
    load_chunk(rb6, v); let g = wq[0]; load_chunk(rb7, v); let h = wq[0];
    mac(v, a, b, c, d, e, f, g, h);
  }

  let r = acc;
  store_row(first, t0, r[0], r[1]);
  if (first + 1u <= last) { store_row(first + 1u, t0, r[2], r[3]); }
  if (first + 2u <= last) { store_row(first + 2u, t0, r[4], r[5]); }
  if (first + 3u <= last) { store_row(first + 3u, t0, r[6], r[7]); }
  if (first + 4u <= last) { store_row(first + 4u, t0, r[8], r[9]); }
  if (first + 5u <= last) { store_row(first + 5u, t0, r[10], r[11]); }
  if (first + 6u <= last) { store_row(first + 6u, t0, r[12], r[13]); }
  if (first + 7u <= last) { store_row(first + 7u, t0, r[14], r[15]); }
}
