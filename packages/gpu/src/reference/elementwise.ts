// CPU twins of the gated activations (shaders/elementwise/*.wgsl and the GEMV's fused epilogue), in float64.

export const silu = (x: number) => x / (1 + Math.exp(-x));
export const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));
export const geluTanh = (x: number) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));

/**
 * erf in float64 to ~1e-15: erf(x) = 2/√π e^(-x²) Σ_n 2^n x^(2n+1) / (1·3·…·(2n+1)), a series of positive terms (no
 * cancellation) that converges for every x; past |x| = 6, erf is ±1 to double precision (erfc(6) ≈ 2e-17).
 */
export function erf(x: number): number {
  const z = Math.abs(x);
  if (z >= 6) return Math.sign(x);
  let term = z;
  let sum = z;
  for (let n = 1; term > sum * 1e-17; n++) {
    term *= (2 * z * z) / (2 * n + 1);
    sum += term;
  }
  return Math.sign(x) * Math.min(1, (2 / Math.sqrt(Math.PI)) * Math.exp(-z * z) * sum);
}

/** GELU with erf (Hugging Face's exact "gelu"): x Φ(x) = 0.5 x (1 + erf(x / √2)). */
export const geluErf = (x: number) => 0.5 * x * (1 + erf(x / Math.SQRT2));

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
