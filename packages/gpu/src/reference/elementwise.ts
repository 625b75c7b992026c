// CPU twins of shaders/elementwise/*.wgsl, in float64.

export const silu = (x: number) => x / (1 + Math.exp(-x));
export const geluTanh = (x: number) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));

export function add(a: Float32Array, b: Float32Array): Float32Array {
  return a.map((v, i) => v + b[i]);
}

/** out[t, i] = act(x[t*stride + i]) (* up[t*upStride + upOffset + i]). */
export function gated(
  act: (x: number) => number,
  x: Float32Array,
  up: Float32Array | undefined,
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
      out[t * cols + i] = up ? v * up[t * upStride + upOffset + i] : v;
    }
  }
  return out;
}
