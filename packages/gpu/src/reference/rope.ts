// CPU twin of shaders/attention/rope-kv-append.wgsl in float64: angles pos * inv_freq and their sin/cos in double
// precision, so the GPU's exact-phase integer path is checked against the true rotation; the append and the q/k
// norm are the twins of attention.ts and norm.ts.

import type { RopeStyle } from '../kernels/rope-kv-append.ts';
import { kvAppend, type PagedCache } from './attention.ts';
import { rmsnorm } from './norm.ts';

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

/**
 * The fused kernel's result: token t's row of the (T, (H + 2·Hkv)·D) qkv split into q (H heads), k and v (Hkv heads each),
 * q and k RMS-normalized per head when `norm` is given, rotated, q returned (T, H, D) and k, v appended to copies of
 * the caches.
 */
export function ropeKvAppend(
  cache: PagedCache,
  qkv: Float32Array,
  heads: number,
  seqIds: ArrayLike<number>,
  positions: ArrayLike<number>,
  invFreq: Float64Array,
  style: RopeStyle,
  norm?: { q: Float32Array; k: Float32Array; eps: number },
): { q: Float32Array; k: Float32Array; v: Float32Array } {
  const [T, Hkv, D] = [seqIds.length, cache.kvHeads, cache.headDim];
  const stride = (heads + 2 * Hkv) * D;
  const part = (from: number, n: number) => {
    const out = new Float32Array(T * n);
    for (let t = 0; t < T; t++) out.set(qkv.subarray(t * stride + from, t * stride + from + n), t * n);
    return out;
  };
  let q: Float32Array = part(0, heads * D);
  let k: Float32Array = part(heads * D, Hkv * D);
  const v = part((heads + Hkv) * D, Hkv * D);
  if (norm) {
    q = rmsnorm(q, norm.q, T * heads, D, norm.eps);
    k = rmsnorm(k, norm.k, T * Hkv, D, norm.eps);
  }
  const qr = Float32Array.from(rope(q, T, heads, D, positions, invFreq, style));
  const kr = Float32Array.from(rope(k, T, Hkv, D, positions, invFreq, style));
  return { q: qr, ...kvAppend(cache, kr, v, seqIds, positions) };
}
