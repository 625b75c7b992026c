// The WebGPU encoder as a reranker (arch/bert.ts with a classification head and token types) in headless Chromium:
//   - against llama.cpp: the browser tier's global setup (scripts/embed-oracle-setup.mjs) wrote a seeded
//     ms-marco-MiniLM-L6-shaped GGUF (2 layers, f32, two token types, rank pooling), serves it on a local hub, and gave
//     the shared rerank pairs' ids (rerankPair) with llama.cpp's logits, every token type 0 (llama.cpp's own) and with
//     the document as type 1 (a doubled-vocabulary copy of the file). The runner must score within 5e-3 of both (the
//     node tier's bar: llama.cpp's GELU reads an f16 table), rank the five documents of one query alike, and give the
//     same logits batched as one by one;
//   - against the CPU reference (reference/bert.ts, float64 sums) on a tiny seeded reranker of each head form (dense +
//     output, output only), with ragged typed pairs: 1e-4;
//   - bad typeSplits are refused, saying what to pass.
import { describe, expect, inject, test } from 'vitest';
import { randomF32, testGpu } from '@intab/testing/gpu';
import { createBertRunner } from './bert.ts';
import { encoderFacts, type EncoderConfig } from '../encoder-config.ts';
import { openEncoderGguf } from '../encoder-load.ts';
import { encodeReference, loadEncoderWeights } from '../reference/bert.ts';
import { bytesSource, urlSource } from '../source.ts';
import type { TensorInfo } from '../types.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    rerankOracle: { ids: number[][]; typeSplits: number[]; logits: number[]; typedLogits: number[] };
  }
}

const TOLERANCE = 5e-3;

describe('the WebGPU reranker against llama.cpp', () => {
  test("an ms-marco-MiniLM-L6-shaped GGUF by URL: llama.cpp's logits within 5e-3, with and without token types; same ranking; batched = one by one", async () => {
    const oracle = inject('rerankOracle');
    const model = await openEncoderGguf(await urlSource(`${inject('embedHubUrl')}/test/reranker/resolve/main/ms-marco-minilm-l6.gguf`));
    expect(model.config).toMatchObject({ arch: 'bert', hidden: 384, layers: 2, typeVocab: 2, pooling: 'cls', normalize: false, classifier: { dense: true, outputs: 1 } });
    const gpu = await testGpu();
    const runner = await createBertRunner(gpu, model.config, model.tensors, { maxTokensPerPass: 1024, maxSequencesPerPass: 16 });
    try {
      expect(runner.facts).toMatchObject({ dimensions: 1, normalized: false, classifier: { outputs: 1, labels: ['LABEL_0'] } });
      const plain = (await runner.encode(oracle.ids)).map((v) => v[0]);
      const typed = (await runner.encode(oracle.ids, { typeSplits: oracle.typeSplits })).map((v) => v[0]);
      const gap = (a: number[], b: number[]) => Math.max(...a.map((v, i) => Math.abs(v - b[i])));
      console.log(JSON.stringify({ test: 'rerank-webgpu', logits: typed, llamacpp_type1: oracle.typedLogits, max_abs_gap_type0: gap(plain, oracle.logits), max_abs_gap_type1: gap(typed, oracle.typedLogits) }));
      plain.forEach((v, i) => expect(Math.abs(v - oracle.logits[i]), `pair ${i}, type 0`).toBeLessThanOrEqual(TOLERANCE));
      typed.forEach((v, i) => expect(Math.abs(v - oracle.typedLogits[i]), `pair ${i}, type 1`).toBeLessThanOrEqual(TOLERANCE));
      // The types matter, and the bar decides the order of the five documents of the first query.
      expect(gap(typed, plain)).toBeGreaterThan(20 * TOLERANCE);
      const order = (s: number[]) => [0, 1, 2, 3, 4].sort((a, b) => s[b] - s[a]);
      expect(order(typed)).toEqual(order(oracle.typedLogits));
      // One by one: the same logits.
      for (const i of [0, 4, 9]) {
        const [alone] = await runner.encode([oracle.ids[i]], { typeSplits: [oracle.typeSplits[i]] });
        expect(Math.abs(alone[0] - typed[i])).toBeLessThan(1e-5);
      }
    } finally {
      runner.destroy();
    }
  });
});

/** A tiny BERT reranker: seeded f32 tensors under llama.cpp's names, as a loader gives them. */
function tinyReranker(c: EncoderConfig, seed: number): { tensors: Map<string, TensorInfo>; values: Map<string, Float32Array> } {
  const { hidden: C, ffn: F } = c;
  const values = new Map<string, Float32Array>();
  const shapes = new Map<string, number[]>();
  let s = seed;
  const add = (name: string, shape: number[], scale = 0.2, offset = 0) => {
    values.set(name, randomF32(shape.reduce((a, b) => a * b, 1), ++s, scale).map((v) => v + offset));
    shapes.set(name, shape);
  };
  add('token_embd.weight', [c.vocab, C], 1);
  add('position_embd.weight', [c.maxPositions, C], 0.5);
  add('token_types.weight', [c.typeVocab, C], 0.5);
  add('token_embd_norm.weight', [C], 0.1, 1);
  add('token_embd_norm.bias', [C], 0.1);
  for (let i = 0; i < c.layers; i++) {
    const b = `blk.${i}.`;
    for (const p of ['q', 'k', 'v']) (add(`${b}attn_${p}.weight`, [C, C], 0.3), add(`${b}attn_${p}.bias`, [C], 0.1));
    add(`${b}attn_output.weight`, [C, C]);
    add(`${b}attn_output.bias`, [C], 0.1);
    add(`${b}attn_output_norm.weight`, [C], 0.1, 1);
    add(`${b}attn_output_norm.bias`, [C], 0.1);
    add(`${b}ffn_up.weight`, [F, C]);
    add(`${b}ffn_up.bias`, [F], 0.1);
    add(`${b}ffn_down.weight`, [C, F], 0.15);
    add(`${b}ffn_down.bias`, [C], 0.1);
    add(`${b}layer_output_norm.weight`, [C], 0.1, 1);
    add(`${b}layer_output_norm.bias`, [C], 0.1);
  }
  if (c.classifier?.dense) (add('cls.weight', [C, C], 0.6), add('cls.bias', [C], 0.1));
  if (c.classifier && c.classifier.outputs > 0) (add('cls.output.weight', [c.classifier.outputs, C], 0.8), add('cls.output.bias', [c.classifier.outputs], 0.1));
  const tensors = new Map([...values].map(([name, v]) => {
    const bytes = new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
    return [name, { name, dtype: 'f32', shape: shapes.get(name)!, source: bytesSource(name, bytes), offset: 0, byteLength: bytes.byteLength } as TensorInfo];
  }));
  return { tensors, values };
}

const TINY: EncoderConfig = {
  arch: 'bert', hidden: 32, layers: 2, heads: 4, headDim: 8, ffn: 64, vocab: 50, eps: 1e-12, maxPositions: 40, typeVocab: 2,
  absolutePositions: true, rope: null, activation: 'gelu', projectionBias: true, pooling: 'cls', normalize: false,
  classifier: { dense: true, outputs: 2, labels: ['LABEL_0', 'LABEL_1'] },
};

describe.each([
  ['dense + output (RoBERTa head, BERT pooler + classifier)', TINY],
  ['output only (a direct projection)', { ...TINY, classifier: { dense: false, outputs: 1, labels: ['LABEL_0'] } }],
] as const)('bert reranker, %s', (_, config) => {
  test('typed ragged pairs: the CPU reference within 1e-4, the same one by one', async () => {
    const gpu = await testGpu();
    const { tensors, values } = tinyReranker(config, 11);
    const runner = await createBertRunner(gpu, config, tensors, { maxTokensPerPass: 128, maxSequencesPerPass: 8 });
    try {
      expect(runner.facts).toEqual(encoderFacts(config));
      const seqs = [[1, 5, 2, 9, 9, 2], [1, 2, 7, 2], Array.from({ length: 40 }, (_, i) => (i * 7 + 3) % 50), [1, 2]];
      const splits = [3, 2, 17, 2];
      const weights = loadEncoderWeights(config, (n) => values.get(n));
      const want = encodeReference(weights, seqs, { typeSplits: splits }).vectors;
      const got = await runner.encode(seqs, { typeSplits: splits });
      got.forEach((v, b) => {
        expect(v).toHaveLength(config.classifier!.outputs);
        v.forEach((x, j) => expect(Math.abs(x - want[b][j]), `sequence ${b} output ${j}`).toBeLessThan(1e-4));
      });
      // Types change the score (a split at the end is every token type 0).
      const untyped = await runner.encode(seqs, { typeSplits: seqs.map((q) => q.length) });
      const plain = await runner.encode(seqs);
      expect(untyped).toEqual(plain);
      expect(Math.max(...got.map((v, b) => Math.abs(v[0] - plain[b][0])))).toBeGreaterThan(1e-2);
      for (const b of [0, 2]) {
        const [alone] = await runner.encode([seqs[b]], { typeSplits: [splits[b]] });
        alone.forEach((x, j) => expect(Math.abs(x - got[b][j])).toBeLessThan(1e-6));
      }
    } finally {
      runner.destroy();
    }
  });
});

describe('bert reranker: typeSplits it refuses', () => {
  test('one split per sequence, each an index ≥ 0', async () => {
    const gpu = await testGpu();
    const runner = await createBertRunner(gpu, TINY, tinyReranker(TINY, 12).tensors, { maxTokensPerPass: 64, maxSequencesPerPass: 4 });
    try {
      await expect(runner.encode([[1, 2, 3], [1, 2]], { typeSplits: [1] })).rejects.toThrow(/1 typeSplits for 2 sequences; give one per sequence/);
      await expect(runner.encode([[1, 2, 3]], { typeSplits: [-1] })).rejects.toThrow(/a split is a token index ≥ 0/);
      expect((await runner.encode([[1, 2, 3]], { typeSplits: [1] }))[0]).toHaveLength(2);
    } finally {
      runner.destroy();
    }
  });
});
