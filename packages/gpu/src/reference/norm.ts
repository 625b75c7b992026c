// CPU twin of shaders/norm/rmsnorm.wgsl (and of the GEMV's fused norm), accumulating in float64.

/** y[t, :] = x[t, :] / sqrt(mean(x[t, :]^2) + eps) * w. */
export function rmsnorm(x: Float32Array, w: Float32Array, rows: number, cols: number, eps: number): Float32Array {
  const y = new Float32Array(rows * cols);
  for (let t = 0; t < rows; t++) {
    let ss = 0;
    for (let c = 0; c < cols; c++) ss += x[t * cols + c] ** 2;
    const scale = 1 / Math.sqrt(ss / cols + eps);
    for (let c = 0; c < cols; c++) y[t * cols + c] = x[t * cols + c] * scale * w[c];
  }
  return y;
}

/**
 * CPU twin of shaders/norm/layernorm.wgsl: y[t, :] = (s - mean) / sqrt(var + eps) * gamma + beta with s = x[t, :]
 * (+ residual row t at t * residualStride; stride 0 adds one row to every row), biased variance, in float64.
 */
export function layernorm(
  x: Float32Array,
  gamma: Float32Array,
  beta: Float32Array,
  rows: number,
  cols: number,
  eps: number,
  residual?: Float32Array,
  residualStride = cols,
): Float32Array {
  const y = new Float32Array(rows * cols);
  const s = new Float64Array(cols);
  for (let t = 0; t < rows; t++) {
    let mean = 0;
    for (let c = 0; c < cols; c++) {
      s[c] = x[t * cols + c] + (residual ? residual[t * residualStride + c] : 0);
      mean += s[c];
    }
    mean /= cols;
    let v = 0;
    for (let c = 0; c < cols; c++) v += (s[c] - mean) ** 2;
    const inv = 1 / Math.sqrt(v / cols + eps);
    for (let c = 0; c < cols; c++) y[t * cols + c] = (s[c] - mean) * inv * gamma[c] + beta[c];
  }
  return y;
}
