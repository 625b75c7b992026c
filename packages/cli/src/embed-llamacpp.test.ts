// Embedding models against llama.cpp (node-llama-cpp's prebuilt CPU build, one thread): `intab make-model --like
// all-minilm-l6 | nomic-embed-v1.5` writes a seeded BERT / nomic-bert GGUF with its WordPiece vocabulary; llama.cpp loads
// it and embeds 20 texts (one word to ~150 tokens: cased words, punctuation, digits, accents, subwords, CJK, an emoji),
// and intab reads the same file (openEncoderGguf, the GGUF's tokenizer, the CPU reference encoder, the WebGPU encoder's
// twin). The ids must be llama.cpp's ([CLS] + its tokenization + [SEP], as its embedding context wraps a text), every
// vector within cosine 0.9999 of llama.cpp's in f32 (0.999 in q8_0, where llama.cpp rounds activations to 8 bits), and the
// 20 texts encoded in one packed pass the same vectors, bit for bit, as each alone. llama.cpp returns the pooled vector
// unnormalised (node-llama-cpp copies llama_get_embeddings_seq): its length is ours before normalisation, which pins the
// pooling's scale too. So that the bar cannot be met by accident, the texts' vectors are far apart, and the reference
// with one family-specific part changed (no position embeddings, another RoPE base, [CLS] pooling) falls below it.
// llama.cpp's GELU is the tanh form read from an f16 table, ours the exact erf: the difference stays within 1e-6.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { dequantize, type WeightDtype } from '@intab/gpu';
import { openEncoderGguf, openTokenizer, pathSource, type EncoderConfig, type Tokenizer } from '@intab/model';
import { encodeReference, loadEncoderWeights, type EncoderWeights } from '@intab/model/reference';
import { EMBED_INPUTS as INPUTS, cosine } from '@intab/testing/embed-inputs';
import { writeSyntheticModel } from './make-model.ts';
import { llamaCppEmbeddings } from './test-llamacpp.ts';

const dir = mkdtempSync(join(tmpdir(), 'intab-embed-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));


const norm = (a: ArrayLike<number>) => Math.sqrt(Array.from(a).reduce((s, x) => s + x * x, 0));

/** llama.cpp's ids ([CLS] + model.tokenize(text) + [SEP], as its embedding context wraps a text) and vectors, one text at a time. */
/** What intab reads of the file: its config, its tokenizer and its weights as f32. */
async function intab(file: string): Promise<{ config: EncoderConfig; tokenizer: Tokenizer; weights: EncoderWeights }> {
  const model = await openEncoderGguf(await pathSource(file));
  const tokenizer = openTokenizer(model);
  if (!tokenizer) throw new Error(`${file} carries no tokenizer`);
  const tensors = new Map<string, Float32Array>();
  for (const [name, t] of model.tensors) {
    const [rows, cols] = t.shape.length === 1 ? [1, t.shape[0]] : t.shape;
    tensors.set(name, dequantize(t.dtype as WeightDtype, await t.source.read(t.offset, t.byteLength), rows, cols));
  }
  return { config: model.config, tokenizer, weights: loadEncoderWeights(model.config, (n) => tensors.get(n), file) };
}

interface Case {
  like: string;
  dtype: WeightDtype;
  layers: number;
  /** Cosine every vector must reach. */
  min: number;
  /** |length of llama.cpp's vector / length of ours before normalisation − 1| at most. */
  lengthTolerance: number;
  /** Inputs also encoded alone (each costs a pass of its own). */
  alone: readonly number[];
  config: Partial<EncoderConfig>;
  /** The reference with one part of the family changed: each must leave the bar. */
  without: Record<string, (w: EncoderWeights) => EncoderWeights>;
}

const withConfig = (w: EncoderWeights, c: Partial<EncoderConfig>): EncoderWeights => ({ ...w, config: { ...w.config, ...c } });
const clsPooling = (w: EncoderWeights) => withConfig(w, { pooling: 'cls' });

const CASES: readonly Case[] = [
  {
    like: 'all-minilm-l6', dtype: 'f32', layers: 6, min: 0.9999, lengthTolerance: 1e-3, alone: [1, 11, 17],
    config: { arch: 'bert', hidden: 384, layers: 6, heads: 12, headDim: 32, ffn: 1536, vocab: 30522, eps: 1e-12, maxPositions: 512, typeVocab: 2, absolutePositions: true, rope: null, activation: 'gelu', projectionBias: true, pooling: 'mean', normalize: true },
    without: { 'position embeddings': (w) => ({ ...w, posEmbd: undefined }), 'mean pooling ([CLS]\'s row instead)': clsPooling },
  },
  {
    // Two of the six layers: the quantized path is the same in each.
    like: 'all-minilm-l6', dtype: 'q8_0', layers: 2, min: 0.999, lengthTolerance: 1e-2, alone: INPUTS.map((_, i) => i),
    config: { arch: 'bert', hidden: 384, layers: 2, pooling: 'mean' },
    without: {},
  },
  {
    like: 'nomic-embed-v1.5', dtype: 'f32', layers: 2, min: 0.9999, lengthTolerance: 1e-3, alone: [1, 11],
    config: { arch: 'nomic-bert', hidden: 768, layers: 2, heads: 12, headDim: 64, ffn: 3072, vocab: 30522, eps: 1e-12, maxPositions: 2048, typeVocab: 2, absolutePositions: false, rope: { theta: 1000, rotaryDim: 64 }, activation: 'swiglu', projectionBias: false, pooling: 'mean', normalize: true },
    without: { 'RoPE base 1000 (10000 instead)': (w) => withConfig(w, { rope: { theta: 10000, rotaryDim: 64 } }), 'mean pooling ([CLS]\'s row instead)': clsPooling },
  },
];

describe('embedding models: intab embeds as llama.cpp does', () => {
  for (const c of CASES) {
    test(`make-model --like ${c.like} --dtype ${c.dtype} --layers ${c.layers}: llama.cpp's ids, vectors within cosine ${c.min}, batched = one by one`, { timeout: 180_000 }, async () => {
      const out = join(dir, `${c.like}-${c.dtype}-${c.layers}.gguf`);
      const written = writeSyntheticModel({ like: c.like, dtype: c.dtype, out, seed: 5, layers: c.layers });
      expect(written).toMatchObject({ arch: c.config.arch, layers: c.layers, vocab: 30522, tokenizer: 'wordpiece' });
      const theirs = await llamaCppEmbeddings(out, INPUTS);
      const { config, tokenizer, weights } = await intab(out);
      rmSync(out, { force: true });
      expect(config).toMatchObject(c.config);

      // Token ids: ours are llama.cpp's, [CLS] and [SEP] included.
      const ids = INPUTS.map((t) => tokenizer.encode(t));
      expect(ids).toEqual(theirs.ids);
      expect(ids[0]).toHaveLength(4); // [CLS] embedding ##s [SEP]
      expect(Math.max(...ids.map((s) => s.length))).toBeGreaterThan(150);
      expect(ids.flat()).toContain(tokenizer.unkId); // the emoji's word

      // Vectors: one packed pass over all 20.
      const batch = encodeReference(weights, ids);
      expect(theirs.vectors[0]).toHaveLength(config.hidden);
      const cos = batch.vectors.map((v, i) => cosine(v, theirs.vectors[i]));
      const lengthRatio = batch.pooled.map((p, i) => norm(theirs.vectors[i]) / norm(p));
      let apart = -1;
      for (let i = 0; i < INPUTS.length; i++) for (let j = 0; j < INPUTS.length; j++) if (i !== j) apart = Math.max(apart, cosine(batch.vectors[i], theirs.vectors[j]));
      const without = Object.fromEntries(Object.entries(c.without).map(([part, edit]) => {
        const few = [2, 9, 13];
        const edited = encodeReference(edit(weights), few.map((i) => ids[i])).vectors;
        return [part, Math.max(...edited.map((v, k) => cosine(v, theirs.vectors[few[k]])))];
      }));
      console.log(JSON.stringify({ test: 'embed-llamacpp', like: c.like, dtype: c.dtype, layers: c.layers, tokens: batch.hidden.length / config.hidden, min_cosine: Math.min(...cos), max_length_ratio_gap: Math.max(...lengthRatio.map((r) => Math.abs(r - 1))), max_cosine_between_texts: apart, cosine_without: without }));
      for (const [i, v] of cos.entries()) expect(v, `input ${i}: ${JSON.stringify(INPUTS[i].slice(0, 40))}`).toBeGreaterThanOrEqual(c.min);
      for (const r of lengthRatio) expect(Math.abs(r - 1)).toBeLessThan(c.lengthTolerance);
      for (const v of batch.vectors) expect(norm(v)).toBeCloseTo(1, 6);
      // The bar is not met by accident: different texts are far apart, and each family part matters.
      expect(apart).toBeLessThan(0.99);
      for (const [part, best] of Object.entries(without)) expect(best, `without ${part}`).toBeLessThan(c.min);

      // Batched = one by one, bit for bit (positions restart and attention stays within each sequence).
      for (const i of c.alone) expect(encodeReference(weights, [ids[i]]).vectors[0]).toEqual(batch.vectors[i]);
    });
  }
});

describe('every dtype make-model writes: llama.cpp loads it and embeds as intab does', () => {
  // One layer and three texts each: what differs between dtypes is how the matrices are stored and read.
  const SWEEP: [string, WeightDtype, number][] = [['all-minilm-l6', 'f16', 0.9999], ['all-minilm-l6', 'bf16', 0.9999], ['all-minilm-l6', 'q4_0', 0.999], ['nomic-embed-v1.5', 'q8_0', 0.999]];
  for (const [like, dtype, min] of SWEEP) {
    test(`make-model --like ${like} --dtype ${dtype} --layers 1: cosine ≥ ${min}`, { timeout: 120_000 }, async () => {
      const out = join(dir, `${like}-${dtype}-1.gguf`);
      writeSyntheticModel({ like, dtype, out, seed: 6, layers: 1 });
      const texts = [INPUTS[1], INPUTS[9], INPUTS[13]];
      const theirs = await llamaCppEmbeddings(out, texts);
      const { tokenizer, weights } = await intab(out);
      rmSync(out, { force: true });
      const ids = texts.map((t) => tokenizer.encode(t));
      expect(ids).toEqual(theirs.ids);
      const cos = encodeReference(weights, ids).vectors.map((v, i) => cosine(v, theirs.vectors[i]));
      console.log(JSON.stringify({ test: 'embed-llamacpp', like, dtype, layers: 1, min_cosine: Math.min(...cos) }));
      for (const v of cos) expect(v).toBeGreaterThanOrEqual(min);
    });
  }
});

describe('make-model arguments for embedding models', () => {
  test('refused before anything is written, saying what to pass', () => {
    const out = join(dir, 'never.gguf');
    expect(() => writeSyntheticModel({ like: 'all-minilm-l6', dtype: 'q8_0', out, seed: 1, tokenizer: 'qwen3' })).toThrow(/carries its own WordPiece vocabulary; leave --tokenizer out/);
    expect(() => writeSyntheticModel({ like: 'nomic-embed-v1.5', dtype: 'q4_K', out, seed: 1 })).toThrow(/--dtype q4_K: an embedding model is written in f32, f16, bf16, q8_0, q4_0/);
    expect(() => writeSyntheticModel({ like: 'minilm', dtype: 'q8_0', out, seed: 1 })).toThrow(/known shapes are .*all-minilm-l6, nomic-embed-v1.5/);
  });
});
