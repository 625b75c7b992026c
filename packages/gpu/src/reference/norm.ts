// CPU twins of shaders/norm/*.wgsl, accumulating in float64.

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

/** h += x (in place on a copy, returned), y = rmsnorm(h) * w. */
export function rmsnormResidual(x: Float32Array, h: Float32Array, w: Float32Array, rows: number, cols: number, eps: number) {
  const hOut = new Float32Array(h.length);
  for (let i = 0; i < rows * cols; i++) hOut[i] = Math.fround(h[i] + x[i]);
  return { h: hOut, y: rmsnorm(hOut, w, rows, cols, eps) };
}
