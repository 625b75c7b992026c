// Rerankers (cross-encoders) against llama.cpp (node-llama-cpp's prebuilt CPU build, one thread): `intab make-model
// --like bge-reranker-base | ms-marco-minilm-l6` writes a seeded BERT GGUF with pooling_type 4 (rank) and llama.cpp's
// cls.* head (ms-marco in f32 and q8_0); node-llama-cpp loads it in its ranking context, and intab reads the same file (openEncoderGguf, the GGUF's
// tokenizer, rerankPair, the CPU reference encoder). For each of 10 (query, document) pairs:
//   - llama.cpp's raw score: its embedding context on the same GGUF returns the rank head's output (n_cls_out floats,
//     the logit) for our ids — ours must be within 5e-3 of it in f32: llama.cpp reads GELU from a table indexed by the
//     input rounded to f16 (a relative step of 2^-11 on every feed-forward value), its sums in f32, while ours are erf
//     and float64; measured gaps are 1.6e-3 to 3.3e-3 on logits of magnitude 0.01 to 2.3. In q8_0, 0.1 (llama.cpp rounds
//     activations to 8 bits too; 0.066 measured). The five documents of one query lie more than twice the bar apart,
//     so the bar decides their ranking;
//   - node-llama-cpp's ranking context, rank(query, document) on text: its probability is sigmoid(logit) of
//     [BOS] q [EOS] [SEP] d [EOS] — our ids for the RoBERTa pair form (bge-reranker); for BERT's (ms-marco) that is one
//     [SEP] more than the model was trained with, and it is compared with our score of those very ids;
//   - the ranking (order of scores) of the five documents of one query equals llama.cpp's;
//   - all pairs in one packed pass give the same logits, bit for bit, as each pair alone (typed or not).
// Token types: llama.cpp adds token-type row 0 to every token (llm_build_bert: "token types are hardcoded to zero"),
// while BERT was trained with the document as type 1. bge-reranker has one type, so the two agree. ms-marco-MiniLM has
// two: intab gives the document type 1 (what the model was trained with, as transformers does); llama.cpp's scores are
// then matched with every token type 0, and the type-1 path is checked another way: a copy of the GGUF whose vocabulary
// is doubled, ids V.. holding token row + type row 1 − type row 0, so llama.cpp (still adding row 0) computes each
// document token with type 1 exactly; our typed pair on the real file must score as llama.cpp does on that copy.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { dequantize, type WeightDtype } from '@intab/gpu';
import { openEncoderGguf, openTokenizer, pairTemplate, pathSource, rerankPair, type EncoderConfig, type Tokenizer } from '@intab/model';
import { encodeReference, loadEncoderWeights, type EncoderWeights } from '@intab/model/reference';
import { RERANK_PAIRS as PAIRS } from '@intab/testing/embed-inputs';
import { writeSyntheticModel } from './make-model.ts';
import { llamaCppRank, typeOneCopy } from './test-rerank-oracle.ts';

const dir = mkdtempSync(join(tmpdir(), 'intab-rerank-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));

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
  config: Partial<EncoderConfig>;
  /** |our logit − llama.cpp's| at most. */
  tolerance: number;
  /** The pair form: node-llama-cpp's rank() builds the same ids (RoBERTa's form), so its probabilities are compared. */
  sameIdsAsRank: boolean;
}

const CASES: readonly Case[] = [
  {
    like: 'bge-reranker-base', dtype: 'f32', layers: 2, tolerance: 5e-3, sameIdsAsRank: true,
    config: { arch: 'bert', hidden: 768, layers: 2, heads: 12, ffn: 3072, vocab: 30522, eps: 1e-5, maxPositions: 512, typeVocab: 1, pooling: 'cls', normalize: false, classifier: { dense: true, outputs: 1, labels: ['LABEL_0'] } },
  },
  {
    like: 'ms-marco-minilm-l6', dtype: 'f32', layers: 2, tolerance: 5e-3, sameIdsAsRank: false,
    config: { arch: 'bert', hidden: 384, layers: 2, heads: 12, ffn: 1536, vocab: 30522, eps: 1e-12, maxPositions: 512, typeVocab: 2, pooling: 'cls', normalize: false, classifier: { dense: true, outputs: 1, labels: ['LABEL_0'] } },
  },
  {
    // q8_0: llama.cpp also rounds each activation row to 8 bits (q8_0 blocks of 32) before every matrix product, which
    // we do not; 0.066 measured, so 0.1, and the documents still lie more than twice that apart.
    like: 'ms-marco-minilm-l6', dtype: 'q8_0', layers: 2, tolerance: 0.1, sameIdsAsRank: false,
    config: { arch: 'bert', hidden: 384, layers: 2, typeVocab: 2, classifier: { dense: true, outputs: 1, labels: ['LABEL_0'] } },
  },
];

describe('rerankers: intab scores pairs as llama.cpp does', () => {
  for (const c of CASES) {
    test(`make-model --like ${c.like} --dtype ${c.dtype} --layers ${c.layers}: logits within ${c.tolerance} of llama.cpp's, same ranking, batched = one by one`, { timeout: 300_000 }, async () => {
      const out = join(dir, `${c.like}-${c.dtype}-${c.layers}.gguf`);
      const written = writeSyntheticModel({ like: c.like, dtype: c.dtype, out, seed: 7, layers: c.layers });
      expect(written).toMatchObject({ arch: 'bert', layers: c.layers, vocab: 30522, tokenizer: 'wordpiece' });
      const { config, tokenizer, weights } = await intab(out);
      expect(config).toMatchObject(c.config);

      // The pair form the file's tokenizer gives, and each pair's ids.
      const template = pairTemplate(tokenizer);
      expect(template).toEqual(c.sameIdsAsRank
        ? { first: [101], middle: [102, 102], last: [102], type1: null }
        : { first: [101], middle: [102], last: [102], type1: { part: 'document', at: 0 } });
      const pairs = PAIRS.map((p) => rerankPair(tokenizer, p.query, p.document, { maxTokens: config.maxPositions }));
      const ids = pairs.map((p) => p.ids);
      expect(Math.max(...ids.map((s) => s.length))).toBeGreaterThan(80);
      expect(Math.min(...ids.map((s) => s.length))).toBeLessThanOrEqual(12);

      const theirs = await llamaCppRank(out, ids, PAIRS, true);
      // Our query and document ids are llama.cpp's tokenization.
      theirs.tokens.forEach(({ query, document }, i) => expect(ids[i]).toEqual([...template.first, ...query, ...template.middle, ...document, ...template.last]));

      // One packed pass, every token type 0 as llama.cpp has it (for bge-reranker, the model's only type).
      const batch = encodeReference(weights, ids).vectors.map((v) => v[0]);
      const llama = theirs.logits.map((l) => l[0]);
      expect(theirs.logits.every((l) => l.length === 1)).toBe(true);
      const gaps = batch.map((v, i) => Math.abs(v - llama[i]));
      const spread = Math.min(...batch.slice(0, 5).flatMap((a, i) => batch.slice(0, 5).filter((_, j) => j !== i).map((b) => Math.abs(a - b))));
      console.log(JSON.stringify({ test: 'rerank-llamacpp', like: c.like, dtype: c.dtype, layers: c.layers, tokens: ids.map((s) => s.length), logits: batch, llamacpp: llama, max_abs_gap: Math.max(...gaps), min_gap_between_documents: spread }));
      for (const [i, g] of gaps.entries()) expect(g, `pair ${i}`).toBeLessThanOrEqual(c.tolerance);
      // The bar decides the ranking: the five documents of one query lie more than twice the bar apart, and rank alike.
      expect(spread).toBeGreaterThan(2 * c.tolerance);
      const order = (s: number[]) => s.slice(0, 5).map((_, i) => i).sort((a, b) => s[b] - s[a]);
      expect(order(batch)).toEqual(order(llama));

      // node-llama-cpp's own ranking context on the texts: rank() is sigmoid of the logit of [BOS] q [EOS] [SEP] d [EOS]
      // — our ids for the RoBERTa form; for BERT's form it puts a second [SEP] between the texts, so it is compared with
      // our score of that sequence (every token type 0, as llama.cpp has it).
      const rankIds = c.sameIdsAsRank ? ids : theirs.tokens.map(({ query, document }) => [template.first[0], ...query, template.last[0], template.last[0], ...document, template.last[0]]);
      const rankLogits = c.sameIdsAsRank ? batch : encodeReference(weights, rankIds).vectors.map((v) => v[0]);
      expect(theirs.probabilities).toHaveLength(PAIRS.length);
      for (const [i, p] of theirs.probabilities!.entries()) expect(Math.abs(sigmoid(rankLogits[i]) - p), `rank() pair ${i}`).toBeLessThanOrEqual(c.tolerance / 4);

      let typedCache: number[] | undefined;
      const typedBatch = () => (typedCache ??= encodeReference(weights, ids, { typeSplits: pairs.map((p) => p.typeSplit) }).vectors.map((v) => v[0]));
      if (config.typeVocab >= 2 && c.dtype === 'f32') {
        // The document as type 1 (what the model was trained with): llama.cpp cannot take token types, so it scores
        // the same pairs on a copy whose ids V.. are the type-1 tokens.
        const typed = typedBatch();
        const copy = join(dir, `${c.like}-type1.gguf`);
        const shift = await typeOneCopy(out, copy, template.last[0]);
        const typeOne = (await llamaCppRank(copy, pairs.map((p) => shift(p.ids, p.typeSplit)))).logits.map((l) => l[0]);
        rmSync(copy, { force: true });
        const typedGaps = typed.map((v, i) => Math.abs(v - typeOne[i]));
        const typeEffect = Math.max(...typed.map((v, i) => Math.abs(v - batch[i])));
        console.log(JSON.stringify({ test: 'rerank-llamacpp', like: c.like, token_types: 'document type 1', logits: typed, llamacpp_type1_copy: typeOne, max_abs_gap: Math.max(...typedGaps), max_change_from_type0: typeEffect }));
        for (const [i, g] of typedGaps.entries()) expect(g, `typed pair ${i}`).toBeLessThanOrEqual(c.tolerance);
        // The types matter: type-0 scores (llama.cpp's own on the real file) are off by far more than the bar.
        expect(typeEffect).toBeGreaterThan(20 * c.tolerance);
      }

      // Batched = one by one, bit for bit.
      for (const i of [0, 4, 9]) {
        expect(encodeReference(weights, [ids[i]]).vectors[0][0]).toBe(batch[i]);
        if (config.typeVocab >= 2) expect(encodeReference(weights, [ids[i]], { typeSplits: [pairs[i].typeSplit] }).vectors[0][0]).toBe(typedBatch()[i]);
      }
      rmSync(out, { force: true });
    });
  }
});
