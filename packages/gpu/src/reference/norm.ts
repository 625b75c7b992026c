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
