// lib/matmul-io: the params block and bindings every matmul kernel shares (gemv, gemv.subgroup,
// gemm, gemm.rows), so their wrappers bind the same way:
//   p: uniform Params     w: weight part, raw ggml bytes as u32     x: (T, K) f32 as vec4
//   y: (T, N) f32 (read-write for ACCUMULATE)     bias: (N) f32 (HAS_BIAS only; a dummy otherwise)

struct Params {
  n: u32,          // N: rows of the full weight (y's row length)
  k: u32,          // K
  row_bytes: u32,  // bytes of one weight row
  row0: u32,       // first row held by this weight part
  rows: u32,       // rows held by this weight part
  t: u32,          // T: tokens (GEMM); B: vectors (GEMV), which are workgroup rows or groups of them
  v0: u32,         // GEMV: the first vector of this dispatch (a batch is split into several); GEMM: 0
  _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
