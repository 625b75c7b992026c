// Rerankers on onnxruntime-node's CPU provider (the Node runtime's 'onnx-wasm') against llama.cpp (node-llama-cpp):
// `make-model --like ms-marco-minilm-l6 | bge-reranker-base --layers 2` GGUFs (f32), @intab/onnx's encoder graph written
// from them (the [CLS] row through the head, a `logits` output, token_type_ids where the model has two types), the 10
// shared rerank pairs (rerankPair's ids) in one pass: every logit within 5e-3 of llama.cpp's (the bar of the node
// tier's rerank-llamacpp.test.ts: llama.cpp's GELU reads an f16 table), every token type 0 (llama.cpp's own) and, for
// the two-type model, with the document as type 1 against llama.cpp on a doubled-vocabulary copy (test-rerank-oracle.ts's
// typeOneCopy); the five documents of one query ranked alike; each pair alone the same (within 1e-5).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { openEncoderGguf, openTokenizer, pairTemplate, pathSource, rerankPair } from '@intab/model';
import { loadOnnxEncoder } from '@intab/onnx';
import { RERANK_PAIRS } from '@intab/testing/embed-inputs';
import { writeSyntheticModel } from '../src/make-model.ts';
import { llamaCppRank, typeOneCopy } from '../src/test-rerank-oracle.ts';
import { nodeOrt } from './ort.ts';

const dir = mkdtempSync(join(tmpdir(), 'intab-rerank-onnx-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const TOLERANCE = 5e-3;
const gap = (a: number[], b: number[]) => Math.max(...a.map((v, i) => Math.abs(v - b[i])));
const order = (s: number[]) => [0, 1, 2, 3, 4].sort((a, b) => s[b] - s[a]);

describe('rerankers on onnxruntime-node: as llama.cpp scores them', () => {
  const runtime = nodeOrt();
  for (const like of ['ms-marco-minilm-l6', 'bge-reranker-base']) {
    test(`make-model --like ${like} --dtype f32 --layers 2: logits within ${TOLERANCE} of llama.cpp's, same ranking, batched = one by one`, { timeout: 240_000 }, async () => {
      const out = join(dir, `${like}.gguf`);
      writeSyntheticModel({ like, dtype: 'f32', out, seed: 9, layers: 2 });
      const files = await openEncoderGguf(await pathSource(out));
      const tokenizer = openTokenizer(files)!;
      const pairs = RERANK_PAIRS.map((p) => rerankPair(tokenizer, p.query, p.document, { maxTokens: files.config.maxPositions }));
      const ids = pairs.map((p) => p.ids);
      const typeSplits = pairs.map((p) => p.typeSplit);
      const typed = files.config.typeVocab >= 2;

      const { runner } = await loadOnnxEncoder(files, { backend: 'onnx-wasm', runtime });
      try {
        expect(runner.facts).toMatchObject({ dimensions: 1, normalized: false, classifier: { outputs: 1 } });
        const plain = (await runner.encode(ids)).map((v) => v[0]);
        const llama = (await llamaCppRank(out, ids)).logits.map((l) => l[0]);
        const report: Record<string, unknown> = { test: 'rerank-onnx', like, logits: plain, llamacpp: llama, max_abs_gap: gap(plain, llama) };
        plain.forEach((v, i) => expect(Math.abs(v - llama[i]), `pair ${i}`).toBeLessThanOrEqual(TOLERANCE));
        expect(order(plain)).toEqual(order(llama));
        let scores = plain;
        if (typed) {
          const copy = join(dir, `${like}-type1.gguf`);
          const shift = await typeOneCopy(out, copy, pairTemplate(tokenizer).last[0]);
          const llamaTyped = (await llamaCppRank(copy, pairs.map((p) => shift(p.ids, p.typeSplit)))).logits.map((l) => l[0]);
          rmSync(copy, { force: true });
          scores = (await runner.encode(ids, { typeSplits })).map((v) => v[0]);
          Object.assign(report, { typed_logits: scores, llamacpp_type1: llamaTyped, max_abs_gap_type1: gap(scores, llamaTyped) });
          scores.forEach((v, i) => expect(Math.abs(v - llamaTyped[i]), `typed pair ${i}`).toBeLessThanOrEqual(TOLERANCE));
          expect(order(scores)).toEqual(order(llamaTyped));
          expect(gap(scores, plain)).toBeGreaterThan(20 * TOLERANCE); // the types matter
        } else {
          // One token type: the splits change nothing.
          expect((await runner.encode(ids, { typeSplits })).map((v) => v[0])).toEqual(plain);
        }
        console.log(JSON.stringify(report));
        for (const i of [0, 4, 9]) {
          const [alone] = await runner.encode([ids[i]], { typeSplits: [typeSplits[i]] });
          expect(Math.abs(alone[0] - scores[i])).toBeLessThan(1e-5);
        }
        await expect(runner.encode(ids.slice(0, 2), { typeSplits: [1] })).rejects.toThrow(/give one per sequence/);
      } finally {
        runner.destroy();
        rmSync(out, { force: true });
      }
    });
  }
});
