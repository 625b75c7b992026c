// Seeded tiny encoders for this package's tests (Node and browser tiers): every tensor encoderTensorShapes names, as
// EncoderFiles hold them (matrices f32 or quantized, norms and biases f32, each in an in-memory file), and the same
// values as f32 for the CPU reference. Test-only: production code never imports it.

import { dequantize, quantize } from '@intab/gpu';
import { bytesSource, encoderTensorShapes, type EncoderConfig, type EncoderFiles, type TensorInfo } from '@intab/model';
import { loadEncoderWeights, type EncoderWeights } from '@intab/model/reference';
import { randomF32 } from '@intab/testing/random';

export { cosine } from '@intab/testing/embed-inputs';

/** A small bert (all-MiniLM's layout) and a small nomic-bert (RoPE, SwiGLU, no biases). */
export const TINY_BERT: EncoderConfig = {
  arch: 'bert', hidden: 64, layers: 2, heads: 4, headDim: 16, ffn: 128, vocab: 300, eps: 1e-12, maxPositions: 96, typeVocab: 2,
  absolutePositions: true, rope: null, activation: 'gelu', projectionBias: true, pooling: 'mean', normalize: true,
};
export const TINY_NOMIC: EncoderConfig = {
  arch: 'nomic-bert', hidden: 64, layers: 2, heads: 2, headDim: 32, ffn: 96, vocab: 300, eps: 1e-12, maxPositions: 128, typeVocab: 2,
  absolutePositions: false, rope: { theta: 1000, rotaryDim: 32 }, activation: 'swiglu', projectionBias: false, pooling: 'mean', normalize: true,
};

/**
 * A seeded encoder: matrices N(0, 1/K) (q and k 1.5× that: attention that depends on which token sits where), stored in
 * `dtype`; embeddings N(0, 1) (positions and types N(0, ¼)); norms near 1; biases small.
 */
export function randomEncoder(config: EncoderConfig, seed: number, dtype: 'f32' | 'q8_0' | 'q4_0' = 'f32'): { files: EncoderFiles; weights: EncoderWeights } {
  const tensors = new Map<string, TensorInfo>();
  const values = new Map<string, Float32Array>();
  let s = seed;
  for (const [name, shape] of encoderTensorShapes(config)) {
    const n = shape.reduce((a, b) => a * b, 1);
    const [rows, cols] = shape.length === 2 ? shape : [1, shape[0]];
    let v: Float32Array;
    if (name.endsWith('norm.weight')) v = randomF32(n, ++s, 0.1).map((x) => x + 1);
    else if (name.endsWith('.bias')) v = randomF32(n, ++s, 0.1);
    else if (name === 'token_embd.weight') v = randomF32(n, ++s, 1);
    else if (name === 'position_embd.weight' || name === 'token_types.weight') v = randomF32(n, ++s, 0.5);
    else v = randomF32(n, ++s, (/attn_[qk]\./.test(name) ? 1.5 : 1) / Math.sqrt(cols));
    // Matrices (and token_embd) in the dtype asked; the position and type tables stay f32, as GGUF writers keep them.
    const quantized = dtype !== 'f32' && shape.length === 2 && name !== 'position_embd.weight' && name !== 'token_types.weight';
    const bytes = quantized ? quantize(dtype, v, rows, cols) : new Uint8Array(v.buffer);
    values.set(name, quantized ? dequantize(dtype, bytes, rows, cols) : v);
    tensors.set(name, { name, dtype: quantized ? dtype : 'f32', shape, source: bytesSource(name, bytes), offset: 0, byteLength: bytes.byteLength });
  }
  return { files: { config, tensors }, weights: loadEncoderWeights(config, (n) => values.get(n), 'random') };
}

/** `count` ragged sequences (lengths cycling through `lengths`), ids spread over the vocabulary, [CLS]-like 1 first. */
export function raggedInputs(config: EncoderConfig, lengths: readonly number[], count = lengths.length): number[][] {
  return Array.from({ length: count }, (_, b) => {
    const n = lengths[b % lengths.length];
    return Array.from({ length: n }, (_, i) => (i === 0 ? 1 : (7 * b + 13 * i + n * 31) % config.vocab));
  });
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}
