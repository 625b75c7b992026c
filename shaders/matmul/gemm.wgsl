// gemm: y[t, n] (+)= sum_k W[n, k] * x[t, k] (+ bias[n])     (prefill, speculative verify, batched decode)
//   W: rows [row0, row0 + rows) of an (N, K) weight in any ggml format, raw bytes as u32 (joined with
//      lib/bytes.wgsl and a load_chunk lib, lib/weights/<dtype>.gemm.wgsl or <dtype>.wgsl: CHUNK, load_chunk)
//   x: (T, K) f32, read as vec4      y: (T, N) f32      bias: (N) f32 when HAS_BIAS
// One workgroup owns a tile of WG_SIZE * ROWS weight rows × TOKENS tokens. It walks K in steps of K_TILE:
// the invocations stage x[tile tokens, k step] in workgroup memory (zeros past T and K), then each
// invocation dequantizes one chunk of each of its ROWS rows ONCE into registers and multiplies it with
// the chunk of all TOKENS staged tokens, accumulating ROWS × TOKENS sums in f32 registers.
// Invocation i owns rows first + i + WG_SIZE * r (r < ROWS); rows past the part and tokens past T are
// computed on zeros or skipped and never written. ACCUMULATE adds into y (the residual stream). ACT 1 applies GELU
// with erf after the bias (an encoder's up projection; lib/gelu-erf.wgsl, joined by the wrapper; not with ACCUMULATE),
// ACT 2 tanh of it clamped to ±15 (a reranker head's dense layer; some backends' tanh overflows past that).
// Variants: any weight format × HAS_BIAS × ACCUMULATE × ACT; f32 math, no optional features needed.
// gemm.rows.wgsl is the barrier-free sibling for software adapters (~7x faster on SwiftShader).
// ROWS ≤ MAX_ROWS and TOKENS ≤ MAX_TOKENS (register arrays need a fixed size); K_TILE % CHUNK == 0.

override WG_SIZE: u32 = 64u;
override ROWS: u32 = 2u;         // rows per invocation
override TOKENS: u32 = 8u;       // tokens per workgroup tile
override K_TILE: u32 = 128u;     // elements of K staged per step (a multiple of CHUNK and 4)
override XS_V4: u32 = TOKENS * K_TILE / 4u;
override HAS_BIAS: bool = false;
override ACCUMULATE: bool = false;
override ACT: u32 = 0u;  // 0: none; 1: y = gelu_erf(W x + bias); 2: y = tanh(W x + bias)

const MAX_ROWS: u32 = 4u;
const MAX_TOKENS: u32 = 16u;

// Params and bindings (p, w, x, y, bias): lib/matmul-io.wgsl, joined by the wrapper.

// x tile: token-major, (TOKENS, K_TILE / 4) vec4.
var<workgroup> xs: array<vec4<f32>, XS_V4>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let first = wid.x * WG_SIZE * ROWS;  // first local row of the tile (uniform per workgroup)
  let t0 = wid.y * TOKENS;             // first token of the tile
  let k4 = p.k / 4u;
  let kt4 = K_TILE / 4u;
  let chunks = p.k / CHUNK;
  let tile_chunks = K_TILE / CHUNK;

  var acc: array<f32, MAX_ROWS * MAX_TOKENS>;  // [r * MAX_TOKENS + t]
  var wr: array<array<vec4<f32>, CHUNK_V4>, MAX_ROWS>;
  var row_byte: array<u32, MAX_ROWS>;
  var row_ok: array<bool, MAX_ROWS>;
  for (var r = 0u; r < ROWS; r++) {
    let lr = first + r * WG_SIZE + lid;
    row_ok[r] = lr < p.rows;
    row_byte[r] = lr * p.row_bytes;
  }

  for (var k0 = 0u; k0 < p.k; k0 += K_TILE) {
    // Stage x[t0 .. t0 + TOKENS, k0 .. k0 + K_TILE], zero-filled past T and K.
    let kv0 = k0 / 4u;
    for (var i = lid; i < XS_V4; i += WG_SIZE) {
      let tt = i / kt4;
      let kv = kv0 + i % kt4;
      let tok = t0 + tt;
      var v = vec4<f32>(0.0);
      if (tok < p.t && kv < k4) { v = x[tok * k4 + kv]; }
      xs[i] = v;
    }
    workgroupBarrier();

    let c0 = k0 / CHUNK;
    for (var cl = 0u; cl < tile_chunks; cl++) {
      let c = c0 + cl;
      if (c >= chunks) { break; }  // uniform: the ragged last K step
      // Dequantize this chunk of each owned row once.
      for (var r = 0u; r < ROWS; r++) {
        if (row_ok[r]) {  // rows past the part keep stale values; their sums are never written
          load_chunk(row_byte[r], c);
          wr[r] = wq;
        }
      }
      // Reuse it across every token of the tile; each x vec4 is read once for all ROWS rows.
      let xc = cl * CHUNK_V4;
      for (var t = 0u; t < TOKENS; t++) {
        let xt = t * kt4 + xc;
        for (var i = 0u; i < CHUNK_V4; i++) {
          let xv = xs[xt + i];
          for (var r = 0u; r < ROWS; r++) {
            acc[r * MAX_TOKENS + t] += dot(wr[r][i], xv);
          }
        }
      }
    }
    workgroupBarrier();
  }

  for (var r = 0u; r < ROWS; r++) {
    if (!row_ok[r]) { continue; }
    let row = p.row0 + first + r * WG_SIZE + lid;
    var b = 0.0;
    if (HAS_BIAS) { b = bias[row]; }
    for (var t = 0u; t < TOKENS; t++) {
      let tok = t0 + t;
      if (tok >= p.t) { break; }
      let yi = tok * p.n + row;
      var v = acc[r * MAX_TOKENS + t] + b;
      if (ACCUMULATE) { v += y[yi]; }
      if (ACT == 1u) { v = gelu_erf(v); }
      if (ACT == 2u) { v = tanh(clamp(v, -15.0, 15.0)); }
      y[yi] = v;
    }
  }
}
