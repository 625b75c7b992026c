// layernorm: y[t, c] = (s[t, c] - mean_t) / sqrt(var_t + eps) * gamma[c] + beta[c]
//   s = x (RESIDUAL false) or x + r (RESIDUAL true), mean_t and var_t over the C values of row t (biased variance).
// The encoder's norms (BERT family: eps 1e-12): the embedding norm LN(token + position + type rows), with r the
// gathered position rows (r_stride C) or the one type row (r_stride 0: every token adds row 0), and the layers'
// post-norms LN(h + sublayer(h)) where the sublayer's GEMM has already added into h (ACCUMULATE) or writes apart
// (then r = h). SUM_OUT also writes s into sum_out (a pre-norm stack's next residual).
//   params: rows T, cols C, eps, r_stride (elements between r's rows; 0 broadcasts one row)
//   x: (T, C) f32    r: rows at t * r_stride, C f32 (RESIDUAL)    gamma, beta: (C) f32    y: (T, C) f32
//   sum_out: (T, C) f32 (SUM_OUT)
// y, sum_out and x are different buffers (a writable binding may not alias another).
// One workgroup owns one row; invocations stride over C. Two reductions (lib/reduce.wgsl): the mean, then the sum of
// squared deviations from it, so a row with a large common offset keeps its variance (E[x²] - E[x]² would cancel).

override WG_SIZE: u32 = 64u;
override RESIDUAL: bool = false;
override SUM_OUT: bool = false;

struct Params { rows: u32, cols: u32, eps: f32, r_stride: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> r: array<f32>;
@group(0) @binding(3) var<storage, read> gamma: array<f32>;
@group(0) @binding(4) var<storage, read> beta: array<f32>;
@group(0) @binding(5) var<storage, read_write> y: array<f32>;
@group(0) @binding(6) var<storage, read_write> sum_out: array<f32>;

fn load(row: u32, c: u32) -> f32 {
  var v = x[row * p.cols + c];
  if (RESIDUAL) { v += r[row * p.r_stride + c]; }
  return v;
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = wid.y * nwg.x + wid.x;
  if (row >= p.rows) { return; }  // uniform per workgroup
  var acc = 0.0;
  for (var c = lid; c < p.cols; c += WG_SIZE) { acc += load(row, c); }
  let mean = wg_sum(acc, lid) / f32(p.cols);
  var dev = 0.0;
  for (var c = lid; c < p.cols; c += WG_SIZE) {
    let d = load(row, c) - mean;
    dev += d * d;
  }
  let inv = inverseSqrt(wg_sum(dev, lid) / f32(p.cols) + p.eps);
  let base = row * p.cols;
  for (var c = lid; c < p.cols; c += WG_SIZE) {
    let s = load(row, c);
    y[base + c] = (s - mean) * inv * gamma[c] + beta[c];
    if (SUM_OUT) { sum_out[base + c] = s; }
  }
}
