// Rerank on the engine in headless Chromium, against llama.cpp: the browser tier's global setup
// (scripts/embed-oracle-setup.mjs) wrote a seeded ms-marco-MiniLM-L6-shaped reranker (2 layers, f32, two token types,
// rank pooling), serves it on a local hub, and gave llama.cpp's logits for the shared rerank pairs with the document
// as token type 1 (as the model was trained; llama.cpp computes it on a copy whose doubled vocabulary carries the type).
// Engine.load downloads the file by URL, and rerank() scores the pairs on intab's WebGPU kernels and on onnx-wasm
// ('auto' on this software adapter): every score within 5e-3 of llama.cpp's logit (its GELU is a table of f16 inputs),
// the documents in llama.cpp's order.
import { afterAll, describe, expect, inject, test } from 'vitest';
import { RERANK_PAIRS } from '@intab/testing/embed-inputs';
import { Engine } from './engine.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    embedHubUrl: string;
    rerankOracle: { ids: number[][]; typeSplits: number[]; logits: number[]; typedLogits: number[] };
  }
}

const RERANKER = { kind: 'url', url: `${inject('embedHubUrl')}/test/reranker/resolve/main/ms-marco-minilm-l6.gguf` } as const;
const oracle = inject('rerankOracle');
/** The pairs that share the first query (five documents about France, and not). */
const FRANCE = RERANK_PAIRS.map((p, i) => ({ ...p, i })).filter((p) => p.query === RERANK_PAIRS[0].query);

const engines: Engine[] = [];
afterAll(async () => {
  for (const e of engines) await e.destroy();
});

describe('rerank against llama.cpp', () => {
  for (const backend of ['webgpu', 'auto'] as const) {
    test(`${backend}: the scores are llama.cpp's logits (document as token type 1) within 5e-3, best first, topN`, async () => {
      const engine = await Engine.load(RERANKER, { backend });
      engines.push(engine);
      const info = engine.modelInfo!;
      expect(info.backend.name).toBe(backend === 'webgpu' ? 'webgpu' : 'onnx-wasm');
      expect(info.rerank).toEqual({ labels: ['LABEL_0'] });
      expect(info.embedding).toBeUndefined();
      const r = await engine.rerank({ query: FRANCE[0].query, documents: FRANCE.map((p) => p.document) });
      expect(r.promptTokens).toBe(FRANCE.reduce((n, p) => n + oracle.ids[p.i].length, 0));
      const expected = FRANCE.map((p, k) => ({ index: k, score: oracle.typedLogits[p.i] })).sort((a, b) => b.score - a.score);
      expect(r.results.map((x) => x.index)).toEqual(expected.map((x) => x.index));
      const gaps = r.results.map((x) => Math.abs(x.score - oracle.typedLogits[FRANCE[x.index].i]));
      console.log(JSON.stringify({ test: `rerank-${info.backend.name}`, max_gap: Math.max(...gaps), ms: Math.round(r.ms) }));
      for (const g of gaps) expect(g).toBeLessThan(5e-3);
      // The documents' scores are apart by more than the bar, so the order is the model's, not rounding's.
      const sorted = expected.map((x) => x.score);
      for (let k = 1; k < sorted.length; k++) expect(sorted[k - 1] - sorted[k]).toBeGreaterThan(1e-2);
      // Every pair of the shared set, each its own query: one request per query, concurrently (packed passes).
      const all = await Promise.all(RERANK_PAIRS.map((p) => engine.rerank({ query: p.query, documents: [p.document] })));
      all.forEach((one, i) => expect(Math.abs(one.results[0].score - oracle.typedLogits[i])).toBeLessThan(5e-3));
      const top = await engine.rerank({ query: FRANCE[0].query, documents: FRANCE.map((p) => p.document), topN: 2 });
      expect(top.results).toHaveLength(2);
      expect(top.results.map((x) => x.index)).toEqual(expected.slice(0, 2).map((x) => x.index));
      await expect(engine.embed({ input: 'Paris' })).rejects.toMatchObject({ name: 'ModelKindError', kind: 'rerank', call: 'embed' });
    });
  }
});
