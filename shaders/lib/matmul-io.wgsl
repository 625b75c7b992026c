// lib/matmul-io: the params block and bindings every matmul kernel shares (gemv*, gemm, gemm.rows), so their
// wrappers bind the same way:
//   p: uniform Params     w: weight part, raw ggml bytes as u32     x: (T, K) f32 as vec4
//   y: (T, p.n) f32 (read-write for ACCUMULATE); weight row r of the part goes to column p.row0 + r, so several
//      matmuls can fill the column ranges of one wider output (q, k and v side by side)
//   bias: f32 indexed by y's column (HAS_BIAS only; a dummy otherwise)

struct Params {
  n: u32,          // y's row length (N, or more when y holds several outputs side by side)
  k: u32,          // K
  row_bytes: u32,  // bytes of one weight row
  row0: u32,       // y column (and bias index) of this part's first row
  rows: u32,       // output rows of this weight part (GATED GEMV: its gate rows)
  t: u32,          // T: tokens (GEMM); B: vectors (GEMV), which are workgroup rows or groups of them
  v0: u32,         // GEMV: the first vector of this dispatch (a batch is split into several); GEMM: 0
  up_row: u32,     // GATED GEMV: rows from a gate row to its up row (lib/gemv-fusion.wgsl)
  eps: f32,        // NORM GEMV: the RMSNorm epsilon (lib/gemv-fusion.wgsl)
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
