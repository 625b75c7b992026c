// CPU twins of the gated activations (shaders/elementwise/*.wgsl and the GEMV's fused epilogue), in float64.

export const silu = (x: number) => x / (1 + Math.exp(-x));
export const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));
export const geluTanh = (x: number) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));

/** out[t, i] = act(x[t*stride + i]) * up[t*upStride + upOffset + i]. */
export function gated(
  act: (x: number) => number,
  x: Float32Array,
  up: Float32Array,
  rows: number,
  cols: number,
  stride = cols,
  upStride = cols,
  upOffset = 0,
): Float32Array {
  const out = new Float32Array(rows * cols);
  for (let t = 0; t < rows; t++) {
    for (let i = 0; i < cols; i++) {
      const v = act(x[t * stride + i]);
      out[t * cols + i] = v * up[t * upStride + upOffset + i];
    }
  }
  return out;
}
