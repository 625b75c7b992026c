// CPU twin of shaders/rope/rope.wgsl in float64: angles pos * inv_freq and their sin/cos in double
// precision, so the GPU's exact-phase integer path is checked against the true rotation.

import type { RopeStyle } from '../kernels/rope.ts';

/** Rotates every head row of x (T, heads, D) by its token's position; returns a new float64 array. */
export function rope(
  x: Float32Array,
  tokens: number,
  heads: number,
  headDim: number,
  positions: ArrayLike<number>,
  invFreq: Float64Array,
  style: RopeStyle,
): Float64Array {
  const half = invFreq.length;
  const out = Float64Array.from(x);
  for (let t = 0; t < tokens; t++) {
    for (let h = 0; h < heads; h++) {
      const base = (t * heads + h) * headDim;
      for (let i = 0; i < half; i++) {
        const a = positions[t] * invFreq[i];
        const c = Math.cos(a);
        const s = Math.sin(a);
        const u = base + (style === 'neox' ? i : 2 * i);
        const w = style === 'neox' ? u + half : u + 1;
        const x0 = x[u];
        const x1 = x[w];
        out[u] = x0 * c - x1 * s;
        out[w] = x0 * s + x1 * c;
      }
    }
  }
  return out;
}
