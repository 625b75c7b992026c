// The WebGPU runner of the decoders that embed (arch/decoder-embed.ts) against the CPU reference
// (reference/decoder-embedding.ts, which llama.cpp and onnxruntime agree with in the node tier) on seeded tiny GGUFs of
// both families from @intab/testing's writer: a Qwen3-Embedding-like qwen3 (causal, last-token pooling, q/k norms, GQA
// 4:2) and an EmbeddingGemma-like gemma-embedding (both ways, a symmetric window of 8 that the test sequences exceed,
// local/global RoPE bases, √C embedding scale, post-norms, GeGLU, mean pooling, dense_2 → dense_3, GQA 2:1). Packed
// passes give what one-by-one passes give; flipping the attention's direction or the window changes the vectors, and
// each setting still matches the reference; a causal model's first state ignores later tokens, a sliding layer's
// ignores tokens past ±⌊window/2⌋; q8_0 on load; bad inputs.
//
// The real models' head shapes run too (Qwen3-Embedding-0.6B's 16 query heads of 128 on 8 kv heads, EmbeddingGemma's 3
// of 256 on one), at a hidden size of 64.
//
// Tolerance: the GPU sums in f32 (GEMM, attention, norms), the reference in float64 and rounds to f32 between steps;
// through 2-3 layers the observed error of a unit vector's elements (each ~0.1) is at most 1.8e-7 (1 − cosine ~1e-13).
// expectClose allows 2e-6 + 1e-4·|ref| (≥ 10× that, room for other adapters' exp/rsqrt), while a wrong mask, window,
// RoPE base or norm moves elements by 1e-2 or more (the "matter" tests).

import { describe, expect, test } from 'vitest';
import { dequantize, quantize, type Gpu, type WeightDtype } from '@intab/gpu';
import { expectClose, testGpu } from '@intab/testing/gpu';
import { syntheticGguf, type SyntheticShape } from '@intab/testing/synthetic';
import type { DecoderEmbeddingConfig } from '../decoder-embedding-config.ts';
import { isDecoderEmbeddingFiles, type DecoderEmbeddingFiles } from '../decoder-embedding-load.ts';
import { ggufTyped } from '../formats/gguf-writer.ts';
import { openAnyGguf } from '../open-any.ts';
import { encodeDecoderReference, loadDecoderEmbeddingWeights } from '../reference/decoder-embedding.ts';
import { bytesSource } from '../source.ts';
import type { TensorInfo } from '../types.ts';
import { createDecoderEmbedRunner } from './decoder-embed.ts';

const QWEN: SyntheticShape = { hidden: 64, ffn: 96, layers: 2, heads: 4, kvHeads: 2, headDim: 16, vocab: 40, ropeTheta: 1e6, context: 64, arch: 'qwen3', pooling: 3 };
// Three layers: two sliding (window 8: ±4, local base 10,000), the last global (the writer's per-layer pattern).
const GEMMA: SyntheticShape = { hidden: 64, ffn: 96, layers: 3, heads: 2, kvHeads: 1, headDim: 32, vocab: 40, ropeTheta: 1e6, context: 64, arch: 'gemma-embedding', window: 8, pooling: 1, dense: 128 };
/** Sharp attention (q and k weights 4× larger), so that which keys a query reaches shows in the vectors. */
const QK_SCALE = 4;

async function open(shape: SyntheticShape, metadata: Record<string, ReturnType<typeof ggufTyped>> = {}): Promise<DecoderEmbeddingFiles> {
  const files = await openAnyGguf(bytesSource('tiny.gguf', syntheticGguf(shape, 'f32', 11, { qkScale: QK_SCALE, metadata })));
  if (!isDecoderEmbeddingFiles(files)) throw new Error('not a decoder embedding model');
  return files;
}

/** The model's tensors as f32, by name (what the reference reads). */
async function tensorsOf(tensors: Map<string, TensorInfo>): Promise<Map<string, Float32Array>> {
  const out = new Map<string, Float32Array>();
  for (const [name, t] of tensors) {
    const [rows, cols] = t.shape.length === 1 ? [1, t.shape[0]] : t.shape;
    out.set(name, dequantize(t.dtype as WeightDtype, await t.source.read(t.offset, t.byteLength), rows, cols));
  }
  return out;
}

/** The reference's vectors of `config` (any variant of the file's) over f32 tensors. */
function reference(config: DecoderEmbeddingConfig, t: Map<string, Float32Array>, seqs: number[][]): Float32Array[] {
  return encodeDecoderReference(loadDecoderEmbeddingWeights(config, (n) => t.get(n)), seqs).vectors;
}

const cosine = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let [ab, aa, bb] = [0, 0, 0];
  for (let i = 0; i < a.length; i++) (ab += a[i] * b[i], aa += a[i] * a[i], bb += b[i] * b[i]);
  return ab / Math.sqrt(aa * bb);
};
const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => Array.from(a).reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);

/** Ragged inputs across the vocabulary: lengths from 1 to well past the window of 8. */
function inputs(vocab: number, lengths: number[]): number[][] {
  return lengths.map((n, b) => Array.from({ length: n }, (_, i) => (7 * b + 13 * i + n) % vocab));
}

/** The GPU vectors of `seqs` match the reference's: per element, by cosine, and as unit vectors. */
function expectReference(got: Float32Array[], want: Float32Array[], dims: number, label: string) {
  expect(got).toHaveLength(want.length);
  got.forEach((v, b) => {
    expect(v).toHaveLength(dims);
    expectClose(v, want[b], { atol: 2e-6, rtol: 1e-4, label: `${label} sequence ${b}` });
    expect(cosine(v, want[b])).toBeGreaterThan(0.99999);
    expect(Math.hypot(...v)).toBeCloseTo(1, 5);
  });
}

async function runVectors(gpu: Gpu, config: DecoderEmbeddingConfig, files: DecoderEmbeddingFiles, seqs: number[][]): Promise<Float32Array[]> {
  const runner = await createDecoderEmbedRunner(gpu, config, files.tensors, { maxTokensPerPass: 128, maxSequencesPerPass: 8 });
  try {
    return await runner.encode(seqs);
  } finally {
    runner.destroy();
  }
}

describe.each([
  ['qwen3 (Qwen3-Embedding-like)', QWEN],
  ['gemma-embedding (EmbeddingGemma-like)', GEMMA],
  ['qwen3, Qwen3-Embedding-0.6B\'s heads', { ...QWEN, heads: 16, kvHeads: 8, headDim: 128 }],
  ['gemma-embedding, EmbeddingGemma-300m\'s heads', { ...GEMMA, heads: 3, kvHeads: 1, headDim: 256 }],
] as const)('decoder embedding runner: %s', (_, shape) => {
  const lengths = [5, 1, 20, 13, 2, 9, 30];

  test('batched, ragged: the reference\'s vectors, and the same vectors one by one', async () => {
    const gpu = await testGpu();
    const files = await open(shape);
    const t = await tensorsOf(files.tensors);
    const runner = await createDecoderEmbedRunner(gpu, files.config, files.tensors, { maxTokensPerPass: 128, maxSequencesPerPass: 8 });
    expect(runner.facts).toEqual({ arch: shape.arch, layers: shape.layers, hidden: 64, vocab: 40, contextLength: 64, dimensions: 64, pooling: shape.pooling === 3 ? 'last' : 'mean', normalized: true, matryoshka: false });
    expect([runner.maxTokensPerPass, runner.maxSequencesPerPass]).toEqual([128, 8]);
    expect(runner.weightBytes).toBe([...files.tensors.values()].reduce((a, x) => a + x.byteLength, 0));
    const seqs = inputs(40, lengths);
    const got = await runner.encode(seqs);
    expectReference(got, reference(files.config, t, seqs), 64, 'packed');
    const single = await Promise.all(seqs.map((s) => runner.encode([s]).then((r) => r[0])));
    single.forEach((v, b) => expectClose(v, got[b], { atol: 1e-6, rtol: 1e-5, label: `sequence ${b} alone` }));
    runner.destroy();
    runner.destroy(); // idempotent
    await expect(runner.encode([[1]])).rejects.toThrow(/destroyed/);
  });

  test('the attention\'s direction and window matter, and every setting matches the reference', async () => {
    const gpu = await testGpu();
    const files = await open(shape);
    const t = await tensorsOf(files.tensors);
    const seqs = inputs(40, [20, 13, 30]);
    const c = files.config;
    const variants: [string, DecoderEmbeddingConfig][] = [
      ['as trained', c],
      ['direction flipped', { ...c, attention: c.attention === 'causal' ? 'bidirectional' : 'causal' }],
      // qwen3 has no window: give every layer one of 6 (causal: t − j < 6); gemma's: none
      ['window changed', { ...c, decoder: { ...c.decoder, slidingWindow: c.decoder.slidingWindow === null ? 6 : null } }],
    ];
    const vectors: Float32Array[][] = [];
    for (const [label, config] of variants) {
      const got = await runVectors(gpu, config, files, seqs);
      expectReference(got, reference(config, t, seqs), 64, label);
      vectors.push(got);
    }
    for (const other of vectors.slice(1)) {
      other.forEach((v, b) => {
        expect(maxDiff(v, vectors[0][b])).toBeGreaterThan(1e-2);
      });
    }
  });
});

describe('decoder embedding runner: what a token sees', () => {
  test('causal (qwen3, cls pooling): the first state ignores every later token; last pooling sees the first', async () => {
    const gpu = await testGpu();
    const files = await open(QWEN);
    const seqs = [[3, 17, 5, 9, 21, 8], [3, 30, 31, 32, 33, 34, 35], [4, 17, 5, 9, 21, 8]];
    const cls = await runVectors(gpu, { ...files.config, pooling: 'cls' }, files, seqs);
    expectClose(cls[1], cls[0], { atol: 1e-6, rtol: 1e-5, label: 'same first token, other later tokens' });
    expect(maxDiff(cls[2], cls[0])).toBeGreaterThan(1e-2);
    const last = await runVectors(gpu, files.config, files, seqs);
    expect(maxDiff(last[2], last[0])).toBeGreaterThan(1e-2); // only the first token differs
  });

  test('symmetric window (one sliding gemma layer, window 8, cls pooling): token 0 sees tokens 0..4, not 5', async () => {
    const gpu = await testGpu();
    const files = await open({ ...GEMMA, layers: 1, pooling: 2 }, { 'gemma-embedding.attention.sliding_window_pattern': ggufTyped('array', [ggufTyped('bool', true)], 'bool') });
    expect(files.config).toMatchObject({ attention: 'bidirectional', pooling: 'cls', decoder: { slidingWindow: 8, slidingLayers: [0] } });
    const t = await tensorsOf(files.tensors);
    const base = Array.from({ length: 16 }, (_, i) => (5 * i + 3) % 40);
    const at = (i: number) => base.map((id, j) => (j === i ? (id + 1) % 40 : id));
    const seqs = [base, at(4), at(5), at(12)];
    const got = await runVectors(gpu, files.config, files, seqs);
    expectReference(got, reference(files.config, t, seqs), 64, 'window');
    expect(maxDiff(got[1], got[0])).toBeGreaterThan(1e-3); // |4 − 0| ≤ 4: a later token inside the window
    expectClose(got[2], got[0], { atol: 1e-6, rtol: 1e-5, label: 'token 5 changed (outside ±4)' });
    expectClose(got[3], got[0], { atol: 1e-6, rtol: 1e-5, label: 'token 12 changed' });
  });
});

describe('decoder embedding runner: loading and refusals', () => {
  test('q8_0 on load: the reference on the q8_0-rounded matrices', async () => {
    const gpu = await testGpu();
    const files = await open(GEMMA);
    const t = await tensorsOf(files.tensors);
    const runner = await createDecoderEmbedRunner(gpu, files.config, files.tensors, { maxTokensPerPass: 64, maxSequencesPerPass: 4, quantize: 'q8_0' });
    // What upload quantizes: every matrix (token_embd, the projections, dense_2 / dense_3); norms stay f32.
    const rounded = new Map([...t].map(([name, v]) => {
      const info = files.tensors.get(name)!;
      if (info.shape.length !== 2) return [name, v];
      const [n, k] = info.shape;
      return [name, dequantize('q8_0', quantize('q8_0', v, n, k), n, k)];
    }));
    const seqs = inputs(40, [6, 17, 3]);
    const got = await runner.encode(seqs);
    const want = reference(files.config, rounded, seqs);
    const exact = reference(files.config, t, seqs);
    got.forEach((v, b) => {
      expect(cosine(v, want[b])).toBeGreaterThan(0.99999);
      expect(cosine(v, exact[b])).toBeGreaterThan(0.99);
    });
    runner.destroy();
  });

  test('empty, too long, too many and out-of-vocabulary inputs, bad limits, a missing tensor', async () => {
    const gpu = await testGpu();
    const files = await open(QWEN);
    const runner = await createDecoderEmbedRunner(gpu, files.config, files.tensors, { maxTokensPerPass: 80, maxSequencesPerPass: 2 });
    expect(await runner.encode([])).toEqual([]);
    await expect(runner.encode([[]])).rejects.toThrow(/1\.\.64/);
    await expect(runner.encode([Array(65).fill(1)])).rejects.toThrow(/context/);
    await expect(runner.encode([[1], [2], [3]])).rejects.toThrow(/maxSequencesPerPass/);
    await expect(runner.encode([Array(50).fill(1), Array(50).fill(1)])).rejects.toThrow(/maxTokensPerPass/);
    await expect(runner.encode([[1, 40]])).rejects.toThrow(/id 40/);
    // the runner still works after refusals
    expect((await runner.encode([[1, 2, 3]]))[0]).toHaveLength(64);
    runner.destroy();
    await expect(createDecoderEmbedRunner(gpu, files.config, files.tensors, { maxTokensPerPass: 4, maxSequencesPerPass: 5 })).rejects.toThrow(/maxSequencesPerPass/);
    // The widest activation, gate|up (T, 2F = 192 floats), must fit one binding; the defaults are bert's.
    const fit = Math.floor(Math.min(gpu.limits.maxStorageBufferBindingSize, gpu.limits.maxBufferSize) / (2 * 96 * 4));
    await expect(createDecoderEmbedRunner(gpu, files.config, files.tensors, { maxTokensPerPass: fit + 1 })).rejects.toThrow(new RegExp(`at most ${fit} tokens`));
    const defaults = await createDecoderEmbedRunner(gpu, files.config, files.tensors);
    expect([defaults.maxTokensPerPass, defaults.maxSequencesPerPass]).toEqual([Math.min(2048, fit), 64]);
    defaults.destroy();
    const missing = new Map(files.tensors);
    missing.delete('blk.1.attn_k_norm.weight');
    await expect(createDecoderEmbedRunner(gpu, files.config, missing)).rejects.toMatchObject({ name: 'ModelMismatchError' });
    const gemma = await open(GEMMA);
    const noDense = new Map(gemma.tensors);
    noDense.delete('dense_3.weight');
    await expect(createDecoderEmbedRunner(gpu, gemma.config, noDense)).rejects.toThrow(/dense_3\.weight/);
  });
});
