// What turns a decoder embedding model's final-norm states into its vector, on the CPU: pooling over one sequence's
// (S, C) states (mean over every token, BOS and EOS included; the first's; the last's), the projections after pooling
// (EmbeddingGemma's dense_2 / dense_3: y = W x, no bias, float64 sums), and L2 normalisation (an all-zero vector stays
// zero, as llama.cpp's common_embd_normalize leaves it). The CPU reference and the ONNX runner (whose graph stops at the
// states) share it, so both finish a vector the same way; the WebGPU runner does the same on the GPU.

import type { DecoderEmbeddingConfig } from './decoder-embedding-config.ts';

/** The (C) pooled state of one sequence's (S, C) states, starting at `offset` (in floats) of `states`. */
export function poolStates(states: Float32Array, S: number, C: number, pooling: DecoderEmbeddingConfig['pooling'], offset = 0): Float32Array {
  if (pooling === 'cls') return states.slice(offset, offset + C);
  if (pooling === 'last') return states.slice(offset + (S - 1) * C, offset + S * C);
  const p = new Float32Array(C);
  for (let j = 0; j < C; j++) {
    let s = 0;
    for (let i = 0; i < S; i++) s += states[offset + i * C + j];
    p[j] = s / S;
  }
  return p;
}

/** `p` through the projections in turn (each (rows, cols), row-major), then L2-normalised when `normalize`. */
export function projectAndNormalize(p: Float32Array, dense: readonly { rows: number; cols: number; weight: Float32Array }[], normalize: boolean): Float32Array {
  let v = p;
  for (const d of dense) {
    const y = new Float32Array(d.rows);
    for (let i = 0; i < d.rows; i++) {
      let s = 0;
      const row = i * d.cols;
      for (let j = 0; j < d.cols; j++) s += d.weight[row + j] * v[j];
      y[i] = s;
    }
    v = y;
  }
  if (!normalize) return v === p ? p.slice() : v;
  let ss = 0;
  for (let j = 0; j < v.length; j++) ss += v[j] * v[j];
  const inv = ss > 0 ? 1 / Math.sqrt(ss) : 0;
  return v.map((e) => e * inv);
}
