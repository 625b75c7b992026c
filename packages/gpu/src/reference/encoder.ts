// CPU twins of the encoder kernels (shaders/attention/attention-encoder*.wgsl, rope-encoder.wgsl,
// shaders/pooling/pool.wgsl), in float64. Sequences are packed: seqStarts (B + 1) holds each one's first row, then T.

import type { RopeStyle } from '../kernels/rope-kv-append.ts';

/** The packing of lengths [n0, n1, ...]: (B + 1) starts, last = T. */
export function packedStarts(lengths: readonly number[]): Uint32Array {
  const s = new Uint32Array(lengths.length + 1);
  for (let b = 0; b < lengths.length; b++) s[b + 1] = s[b] + lengths[b];
  return s;
}

/** Token rows of a tensor inside a wider buffer: row t at t * stride + offset. */
export interface RowsOf {
  data: Float32Array;
  stride: number;
  offset: number;
}

/**
 * Attention within each packed sequence: out[t, h] = Σ_{j in seq(t), t − before ≤ j ≤ t + after} softmax_j(scale
 * q[t,h]·k[j,kvh]) v[j,kvh], kvh = h / (H / Hkv); every key of the sequence by default (bidirectional). Returns (T, H, D)
 * float64.
 */
export function encoderAttention(
  q: RowsOf,
  k: RowsOf,
  v: RowsOf,
  seqStarts: ArrayLike<number>,
  heads: number,
  kvHeads: number,
  headDim: number,
  scale = 1 / Math.sqrt(headDim),
  reach: { before?: number; after?: number } = {},
): Float64Array {
  const before = reach.before ?? Infinity;
  const after = reach.after ?? Infinity;
  const B = seqStarts.length - 1;
  const T = seqStarts[B];
  const D = headDim;
  const out = new Float64Array(T * heads * D);
  for (let b = 0; b < B; b++) {
    const [lo, hi] = [seqStarts[b], seqStarts[b + 1]];
    const s = new Float64Array(hi - lo);
    for (let t = lo; t < hi; t++) {
      for (let h = 0; h < heads; h++) {
        const kvh = Math.floor(h / (heads / kvHeads));
        const qb = t * q.stride + q.offset + h * D;
        const [ja, jz] = [Math.max(lo, t - before), Math.min(hi, t + after + 1)]; // the keys t sees: [ja, jz)
        let m = -Infinity;
        for (let j = ja; j < jz; j++) {
          const kb = j * k.stride + k.offset + kvh * D;
          let acc = 0;
          for (let d = 0; d < D; d++) acc += q.data[qb + d] * k.data[kb + d];
          s[j - lo] = acc * scale;
          m = Math.max(m, s[j - lo]);
        }
        let l = 0;
        for (let j = ja; j < jz; j++) l += (s[j - lo] = Math.exp(s[j - lo] - m));
        const ob = (t * heads + h) * D;
        for (let j = ja; j < jz; j++) {
          const vb = j * v.stride + v.offset + kvh * D;
          const p = s[j - lo] / l;
          for (let d = 0; d < D; d++) out[ob + d] += p * v.data[vb + d];
        }
      }
    }
  }
  return out;
}

/**
 * RoPE in place on a copy of packed rows: heads [offset, offset + heads·D) of each row (stride), token t at its
 * position in its sequence, angle pos · invFreq[i] in float64. Returns the rotated copy (float64).
 */
export function ropeEncoder(
  rows: Float32Array | Float64Array,
  stride: number,
  spans: readonly { offset: number; heads: number }[],
  headDim: number,
  seqStarts: ArrayLike<number>,
  invFreq: Float64Array,
  style: RopeStyle,
): Float64Array {
  const out = Float64Array.from(rows);
  const half = invFreq.length;
  const B = seqStarts.length - 1;
  for (let b = 0; b < B; b++) {
    for (let t = seqStarts[b]; t < seqStarts[b + 1]; t++) {
      const pos = t - seqStarts[b];
      for (const { offset, heads } of spans) {
        for (let h = 0; h < heads; h++) {
          const base = t * stride + offset + h * headDim;
          for (let i = 0; i < half; i++) {
            const a = pos * invFreq[i];
            const [c, s] = [Math.cos(a), Math.sin(a)];
            const u = base + (style === 'neox' ? i : 2 * i);
            const w = style === 'neox' ? u + half : u + 1;
            const [x0, x1] = [out[u], out[w]];
            out[u] = x0 * c - x1 * s;
            out[w] = x0 * s + x1 * c;
          }
        }
      }
    }
  }
  return out;
}

/**
 * Pooling per packed sequence, then L2 normalization of the first `dims` values: (B, dims) float32.
 * 'mean' over the sequence's rows, 'cls' its first row, 'last' its last; an empty sequence gives zeros.
 */
export function poolSequences(
  x: Float32Array | Float64Array,
  cols: number,
  seqStarts: ArrayLike<number>,
  mode: 'mean' | 'cls' | 'last',
  normalize = true,
  dims = cols,
): Float32Array {
  const B = seqStarts.length - 1;
  const out = new Float32Array(B * dims);
  const v = new Float64Array(dims);
  for (let b = 0; b < B; b++) {
    const [lo, hi] = [seqStarts[b], seqStarts[b + 1]];
    v.fill(0);
    if (hi > lo) {
      for (let c = 0; c < dims; c++) {
        if (mode === 'mean') {
          for (let t = lo; t < hi; t++) v[c] += x[t * cols + c];
          v[c] /= hi - lo;
        } else v[c] = x[(mode === 'cls' ? lo : hi - 1) * cols + c];
      }
    }
    let ss = 0;
    for (let c = 0; c < dims; c++) ss += v[c] * v[c];
    const inv = normalize ? 1 / Math.max(Math.sqrt(ss), 1e-12) : 1;
    for (let c = 0; c < dims; c++) out[b * dims + c] = v[c] * inv;
  }
  return out;
}
