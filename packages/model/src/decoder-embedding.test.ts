// Decoder embedding models (Qwen3-Embedding, EmbeddingGemma): their GGUFs open as embedding models when asked (and as
// before when not), the config reads what llama.cpp reads (pooling, a gemma-embedding's symmetric window, pattern, local
// RoPE base and dense projections), bad files are typed errors, and the CPU reference's whole-sequence pass
// (hiddenStates) is the token-at-a-time forward's twin: causally, the same states bit for bit (the lm_head over them is
// logitsAll); both ways, a token sees later tokens, but on a sliding layer only those within ±⌊window/2⌋. Tiny shapes
// from @intab/testing's writer; the models' real sizes are checked against llama.cpp in the CLI's node tier.

import { describe, expect, it } from 'vitest';
import { DECODER_EMBEDDING_SHAPES, syntheticGguf, type SyntheticShape } from '@intab/testing/synthetic';
import { decoderEmbeddingConfigFromGguf, decoderEmbeddingFacts, isDecoderEmbeddingGguf } from './decoder-embedding-config.ts';
import { isDecoderEmbeddingFiles, openDecoderEmbeddingGguf } from './decoder-embedding-load.ts';
import { ModelFormatError, UnsupportedModelError } from './errors.ts';
import { parseGguf } from './formats/gguf.ts';
import { ggufTyped } from './formats/gguf-writer.ts';
import { openAnyGguf, openAnyHfFolder, isEncoderFiles, isEmbeddingModelFiles } from './open-any.ts';
import { encodeDecoderReference, loadDecoderEmbeddingWeights } from './reference/decoder-embedding.ts';
import { createReferenceModel } from './reference/llama.ts';
import { bytesSource } from './source.ts';
import type { TensorInfo } from './types.ts';
import { dequantize, type WeightDtype } from '@intab/gpu';

const QWEN: SyntheticShape = { hidden: 64, ffn: 96, layers: 2, heads: 4, kvHeads: 2, headDim: 16, vocab: 40, ropeTheta: 1e6, context: 64, arch: 'qwen3', pooling: 3 };
const GEMMA: SyntheticShape = { hidden: 64, ffn: 96, layers: 2, heads: 2, kvHeads: 1, headDim: 32, vocab: 40, ropeTheta: 1e6, context: 64, arch: 'gemma-embedding', window: 8, pooling: 1, dense: 128 };

async function open(shape: SyntheticShape, metadata: Parameters<typeof syntheticGguf>[3] = {}) {
  return openAnyGguf(bytesSource('tiny.gguf', syntheticGguf(shape, 'f32', 3, metadata)));
}

/** The model's tensors as f32, by name. */
async function tensorsOf(files: { tensors: Map<string, TensorInfo> }) {
  const out = new Map<string, Float32Array>();
  for (const [name, t] of files.tensors) {
    const [rows, cols] = t.shape.length === 1 ? [1, t.shape[0]] : t.shape;
    out.set(name, dequantize(t.dtype as WeightDtype, await t.source.read(t.offset, t.byteLength), rows, cols));
  }
  return out;
}

describe('opening decoder embedding GGUFs', () => {
  it('Qwen3-Embedding: a qwen3 file with pooling_type 3 opens as a causal, last-token embedding model', async () => {
    const files = await open(QWEN);
    expect(isDecoderEmbeddingFiles(files)).toBe(true);
    if (!isDecoderEmbeddingFiles(files)) return;
    expect(files.config).toMatchObject({ attention: 'causal', pooling: 'last', dense: [], normalize: true, decoder: { arch: 'qwen3', hidden: 64, kvHeads: 2, qkNorm: true } });
    expect(decoderEmbeddingFacts(files.config)).toEqual({ arch: 'qwen3', layers: 2, hidden: 64, vocab: 40, contextLength: 64, dimensions: 64, pooling: 'last', normalized: true, matryoshka: false });
  });

  it('EmbeddingGemma: gemma-embedding is Gemma 3 both ways, symmetric window, local RoPE base, dense_2 then dense_3', async () => {
    const files = await open({ ...GEMMA, layers: 7 });
    if (!isDecoderEmbeddingFiles(files)) throw new Error('not a decoder embedding model');
    const c = files.config;
    expect(c).toMatchObject({ attention: 'bidirectional', pooling: 'mean', normalize: true, dense: [{ name: 'dense_2.weight', rows: 128, cols: 64 }, { name: 'dense_3.weight', rows: 64, cols: 128 }] });
    // llama.cpp's pattern 6 (seven layers: no key written): layers 5 is global.
    expect(c.decoder).toMatchObject({ arch: 'gemma3', slidingWindow: 8, slidingLayers: [0, 1, 2, 3, 4, 6], postNorms: true, activation: 'gelu_tanh', embedScale: Math.fround(8), attnScale: 1 / Math.sqrt(32), rope: { theta: 1e6, localTheta: 10000, style: 'neox' } });
    expect(decoderEmbeddingFacts(c)).toMatchObject({ arch: 'gemma-embedding', dimensions: 64 });
    // Cut below one period, the writer says the pattern per layer, the last layer global (llama.cpp needs one).
    const cut = await open(GEMMA);
    if (!isDecoderEmbeddingFiles(cut)) throw new Error('not a decoder embedding model');
    expect(cut.config.decoder.slidingLayers).toEqual([0]);
  });

  it('openAnyGguf tells them apart: a qwen3 file with a pooling type embeds, without one it generates; isEncoderFiles is BERT only', async () => {
    const qwen = await open(QWEN);
    expect(isDecoderEmbeddingFiles(qwen) && isEmbeddingModelFiles(qwen)).toBe(true);
    expect(isEncoderFiles(qwen)).toBe(false);
    const gemma = await open(GEMMA);
    expect(isDecoderEmbeddingFiles(gemma)).toBe(true);
    // A qwen3 file without a pooling type is a text generator.
    const plain = await open({ ...QWEN, pooling: undefined });
    expect(isDecoderEmbeddingFiles(plain) || isEmbeddingModelFiles(plain)).toBe(false);
  });

  it('refuses what it cannot run, naming the key', async () => {
    const meta = Object.fromEntries((await parseGguf(bytesSource('q.gguf', syntheticGguf(QWEN, 'f32', 3)))).metadata);
    expect(isDecoderEmbeddingGguf(meta)).toBe(true);
    expect(() => decoderEmbeddingConfigFromGguf({ ...meta, 'qwen3.pooling_type': 4 }, 'rerank.gguf')).toThrow(/qwen3\.pooling_type.*reranker/);
    expect(() => decoderEmbeddingConfigFromGguf({ ...meta, 'qwen3.pooling_type': 7 }, 'x.gguf')).toThrow(ModelFormatError);
    const g = await parseGguf(bytesSource('g.gguf', syntheticGguf(GEMMA, 'f32', 3)));
    const gm = Object.fromEntries(g.metadata);
    const { ['gemma-embedding.attention.sliding_window']: _, ...noWindow } = gm;
    expect(() => decoderEmbeddingConfigFromGguf(noWindow, 'g.gguf', g.tensors)).toThrow(/sliding_window.*is missing/);
    // dense_2 that does not read the hidden size, or a chain that does not end there.
    const bad = g.tensors.map((t) => (t.name === 'dense_2.weight' ? { ...t, shape: [128, 32] } : t));
    expect(() => decoderEmbeddingConfigFromGguf(gm, 'g.gguf', bad)).toThrow(ModelFormatError);
    const noDense3 = g.tensors.filter((t) => t.name !== 'dense_3.weight');
    expect(() => decoderEmbeddingConfigFromGguf(gm, 'g.gguf', noDense3)).toThrow(/should end at the hidden size 64/);
    await expect(openDecoderEmbeddingGguf(bytesSource('plain.gguf', syntheticGguf({ ...QWEN, pooling: undefined }, 'f32', 3)))).rejects.toThrow(/not a decoder embedding model/);
    await expect(open(QWEN, { metadata: { 'qwen3.pooling_type': ggufTyped('u32', 4) } })).rejects.toThrow(UnsupportedModelError);
  });
});

it('a decoder\'s sentence-transformers folder is refused, saying to convert it to GGUF', async () => {
  const json = (name: string, o: unknown) => [name, bytesSource(name, new TextEncoder().encode(JSON.stringify(o)))] as const;
  const files = new Map([
    json('config.json', { model_type: 'gemma3_text', architectures: ['Gemma3TextModel'] }),
    json('modules.json', [{ idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' }, { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' }, { idx: 2, name: '2', path: '2_Dense', type: 'sentence_transformers.models.Dense' }]),
  ]);
  await expect(openAnyHfFolder(files)).rejects.toThrow(/modules\.json: \(Pooling module\) = a gemma3_text decoder trained to embed is not supported: .*convert_hf_to_gguf\.py/);
});

describe('the reference: whole sequences through the Llama-family forward', () => {
  it('causal hiddenStates are the token-at-a-time forward\'s states (its lm_head gives logitsAll, bit for bit)', async () => {
    const files = await open(QWEN);
    if (!isDecoderEmbeddingFiles(files)) throw new Error('not a decoder embedding model');
    const t = await tensorsOf(files);
    const c = files.config.decoder;
    const model = createReferenceModel(c, (n) => t.get(n));
    const ids = [3, 17, 5, 5, 39, 0, 12];
    const states = model.hiddenStates(ids);
    model.reset();
    const logits = model.logitsAll(ids, 0);
    const emb = t.get('token_embd.weight')!;
    for (let i = 0; i < ids.length; i++) {
      for (const v of [0, 11, 39]) {
        let s = 0;
        for (let j = 0; j < c.hidden; j++) s += emb[v * c.hidden + j] * states[i * c.hidden + j];
        expect(Math.fround(s)).toBe(logits[i * c.vocab + v]);
      }
    }
  });

  it('both ways: a token sees later ones, on a sliding layer only within ±⌊window/2⌋', async () => {
    // One layer, sliding (window 8: ±4), both ways.
    const files = await open({ ...GEMMA, layers: 1 }, { metadata: { 'gemma-embedding.attention.sliding_window_pattern': ggufTyped('array', [ggufTyped('bool', true)], 'bool') } });
    if (!isDecoderEmbeddingFiles(files)) throw new Error('not a decoder embedding model');
    expect(files.config.decoder.slidingLayers).toEqual([0]);
    const t = await tensorsOf(files);
    const model = createReferenceModel(files.config.decoder, (n) => t.get(n));
    const C = 64;
    const ids = Array.from({ length: 12 }, (_, i) => (i * 7 + 2) % 40);
    const row = (s: Float32Array, i: number) => s.slice(i * C, (i + 1) * C);
    const base = model.hiddenStates(ids, { bidirectional: true });
    const near = model.hiddenStates(ids.map((id, i) => (i === 6 ? (id + 1) % 40 : id)), { bidirectional: true }); // token 6 changed
    expect(row(near, 2)).not.toEqual(row(base, 2)); // |6 − 2| = 4: inside the window, a later token
    expect(row(near, 1)).toEqual(row(base, 1)); // |6 − 1| = 5: outside
    expect(row(near, 11)).toEqual(row(base, 11)); // |6 − 11| = 5: outside
    const causal = model.hiddenStates(ids.map((id, i) => (i === 6 ? (id + 1) % 40 : id)));
    const causalBase = model.hiddenStates(ids);
    expect(row(causal, 2)).toEqual(row(causalBase, 2)); // causally, token 2 never sees token 6
  });

  it('pooling and the projections: mean over every token, dense_2 then dense_3, normalised; packing changes nothing', async () => {
    const files = await open(GEMMA);
    if (!isDecoderEmbeddingFiles(files)) throw new Error('not a decoder embedding model');
    const t = await tensorsOf(files);
    const weights = loadDecoderEmbeddingWeights(files.config, (n) => t.get(n));
    const seqs = [[2, 5, 9, 1], [2, 7, 1], [2, 30, 31, 32, 33, 34, 35, 36, 37, 38, 1]];
    const { vectors, pooled, hidden } = encodeDecoderReference(weights, seqs);
    // By hand for the second sequence: mean of its rows, then W3 (W2 mean).
    const C = 64;
    const rows = hidden.slice(4 * C, 7 * C);
    const mean = Array.from({ length: C }, (_, j) => (rows[j] + rows[C + j] + rows[2 * C + j]) / 3);
    const w2 = t.get('dense_2.weight')!;
    const w3 = t.get('dense_3.weight')!;
    const mid = Array.from({ length: 128 }, (_, r) => mean.reduce((s, x, j) => s + w2[r * C + j] * x, 0));
    const out = Array.from({ length: C }, (_, r) => mid.reduce((s, x, j) => s + w3[r * 128 + j] * x, 0));
    out.forEach((v, i) => expect(pooled[1][i]).toBeCloseTo(v, 4));
    const len = Math.hypot(...pooled[1]);
    vectors[1].forEach((v, i) => expect(v).toBeCloseTo(pooled[1][i] / len, 6));
    seqs.forEach((s, b) => expect(encodeDecoderReference(weights, [s]).vectors[0]).toEqual(vectors[b]));
  });
});

it('the make-model shapes are the real models\' (config.json)', () => {
  expect(DECODER_EMBEDDING_SHAPES['qwen3-embedding-0.6b']).toMatchObject({ hidden: 1024, ffn: 3072, layers: 28, heads: 16, kvHeads: 8, headDim: 128, arch: 'qwen3', pooling: 3 });
  expect(DECODER_EMBEDDING_SHAPES['embeddinggemma-300m']).toMatchObject({ hidden: 768, ffn: 1152, layers: 24, heads: 3, kvHeads: 1, headDim: 256, context: 2048, arch: 'gemma-embedding', window: 512, pooling: 1, dense: 3072 });
});
