// CPU twins of shaders/matmul/*.wgsl: dequantize with the block codecs (formats/codecs.ts), then dot in float64.

import type { WeightDtype } from '../formats/blocks.ts';
import { dequantize } from '../formats/codecs.ts';

/**
 * y[b, n] = sum_k W[n, k] * x[b, k] (+ bias[n]) (+ y0[b, n]), for raw ggml weight bytes.
 * Used for GEMV (B = 1) and GEMM (B = T tokens).
 */
export function matmul(
  dtype: WeightDtype,
  wBytes: Uint8Array,
  n: number,
  k: number,
  x: Float32Array,
  batch: number,
  bias?: Float32Array,
  y0?: Float32Array,
): Float32Array {
  const w = dequantize(dtype, wBytes, n, k);
  const y = new Float32Array(batch * n);
  for (let b = 0; b < batch; b++) {
    for (let r = 0; r < n; r++) {
      let acc = 0;
      for (let i = 0; i < k; i++) acc += w[r * k + i] * x[b * k + i];
      if (bias) acc += bias[r];
      if (y0) acc += y0[b * n + r];
      y[b * n + r] = acc;
    }
  }
  return y;
}
