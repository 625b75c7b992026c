// @ts-check
// Global setup of the browser test tier, for the embedding tests: a seeded all-MiniLM-L6-shaped GGUF (2 layers, f32,
// its WordPiece vocabulary inside) written by `intab make-model`, served by a local hub at `test/minilm`, and what
// llama.cpp (node-llama-cpp, native, in this Node process) makes of it: the ids and pooled vectors of the shared
// embedding inputs. Tests read inject('embedHubUrl') and inject('embedOracle') and compare the engine's vectors in
// Chromium with llama.cpp's directly. Likewise for rerankers: a seeded ms-marco-MiniLM-L6-shaped GGUF (2 layers, f32,
// two token types, rank pooling) at `test/reranker`, the shared rerank pairs' ids as intab formats them (rerankPair) and
// llama.cpp's logits for them, every token type 0 (llama.cpp's own) and with the document as type 1 (through
// typeOneCopy's doubled vocabulary): inject('rerankOracle'). And decoders trained to embed: Qwen3-Embedding- and
// EmbeddingGemma-shaped GGUFs (make-model, 2 layers, f32, their real tokenizers, widths cut to 64 so the files stay
// small; EmbeddingGemma's window cut to 16 so the inputs pass it) at `test/decoder-embed`, and llama.cpp's ids and
// vectors of the shared inputs: inject('decoderEmbedOracle').
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHubServer } from '@intab/testing/hub-server';
import { EMBED_INPUTS, RERANK_PAIRS } from '@intab/testing/embed-inputs';
import { openEncoderGguf, openTokenizer, pairTemplate, pathSource, rerankPair } from '../packages/model/src/index.ts';
import { writeSyntheticModel } from '../packages/cli/src/make-model.ts';
import { llamaCppDecoderEmbeddings, llamaCppEmbeddings } from '../packages/cli/src/test-llamacpp.ts';
import { llamaCppRank, typeOneCopy } from '../packages/cli/src/test-rerank-oracle.ts';

/** @param {{ provide(key: string, value: unknown): void }} project */
export default async function setup(project) {
  const dir = mkdtempSync(join(tmpdir(), 'intab-embed-hub-'));
  const out = join(dir, 'all-minilm-l6.gguf');
  writeSyntheticModel({ like: 'all-minilm-l6', dtype: 'f32', layers: 2, seed: 27, out });
  const oracle = await llamaCppEmbeddings(out, EMBED_INPUTS);
  const rerankDir = mkdtempSync(join(tmpdir(), 'intab-rerank-hub-'));
  const reranker = join(rerankDir, 'ms-marco-minilm-l6.gguf');
  writeSyntheticModel({ like: 'ms-marco-minilm-l6', dtype: 'f32', layers: 2, seed: 28, out: reranker });
  const tokenizer = openTokenizer(await openEncoderGguf(await pathSource(reranker)));
  if (!tokenizer) throw new Error(`${reranker} carries no tokenizer`);
  const pairs = RERANK_PAIRS.map((p) => rerankPair(tokenizer, p.query, p.document, { maxTokens: 512 }));
  const ids = pairs.map((p) => p.ids);
  const copy = join(dir, 'ms-marco-type1.gguf');
  const shift = await typeOneCopy(reranker, copy, pairTemplate(tokenizer).last[0]);
  const typed = await llamaCppRank(copy, pairs.map((p) => shift(p.ids, p.typeSplit)));
  rmSync(copy, { force: true });
  const rerankOracle = {
    ids,
    typeSplits: pairs.map((p) => p.typeSplit),
    logits: (await llamaCppRank(reranker, ids)).logits.map((l) => l[0]),
    typedLogits: typed.logits.map((l) => l[0]),
  };
  const decoderDir = mkdtempSync(join(tmpdir(), 'intab-decoder-embed-hub-'));
  /** @type {Record<string, { ids: number[][]; vectors: number[][] }>} */
  const decoderEmbedOracle = {};
  const small = { hidden: 64, ffn: 128, heads: 4, kvHeads: 2, headDim: 16 };
  for (const [like, widths] of [['qwen3-embedding-0.6b', small], ['embeddinggemma-300m', { ...small, heads: 2, kvHeads: 1, headDim: 32, window: 16, dense: 128 }]]) {
    const file = join(decoderDir, `${like}.gguf`);
    writeSyntheticModel({ like, dtype: 'f32', layers: 2, seed: 29, out: file, widths });
    decoderEmbedOracle[like] = await llamaCppDecoderEmbeddings(file, EMBED_INPUTS);
  }
  const hub = await startHubServer({ 'test/minilm': dir, 'test/reranker': rerankDir, 'test/decoder-embed': decoderDir });
  project.provide('embedHubUrl', hub.url);
  project.provide('embedOracle', oracle);
  project.provide('rerankOracle', rerankOracle);
  project.provide('decoderEmbedOracle', decoderEmbedOracle);
  return async () => {
    await hub.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(rerankDir, { recursive: true, force: true });
    rmSync(decoderDir, { recursive: true, force: true });
  };
}
