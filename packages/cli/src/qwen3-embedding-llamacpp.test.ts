// Qwen3-Embedding against llama.cpp (test-decoder-embed.ts): `intab make-model --like qwen3-embedding-0.6b` writes
// llama.cpp's `qwen3` with pooling_type 3 (last) and the real Qwen3 tokenizer appending <|endoftext|> (the GGUF's EOS,
// add_eos_token) — Qwen3-0.6B's widths (1024, 16 query / 8 kv heads of 128, F 3072), cut to two layers (f32) or one
// (q8_0). Causal attention and last-token pooling: with one layer the last token's state does not depend on whether the
// others attend causally (its own attention row is the same), so the f32 case, whose bar is the tighter, runs two.

import { describe, expect, test } from 'vitest';
import type { LlamaConfig } from '@intab/model';
import { ALL, checkDecoderEmbedding } from './test-decoder-embed.ts';
import { writeSyntheticModel } from './make-model.ts';

const qwen3: Partial<LlamaConfig> = { arch: 'qwen3', hidden: 1024, heads: 16, kvHeads: 8, headDim: 128, ffn: 3072, vocab: 151669, qkNorm: true, tiedEmbeddings: true, maxContext: 32768, bosId: 151643, eosIds: [151643, 151645] };

describe('Qwen3-Embedding: intab embeds as llama.cpp does', () => {
  test('make-model --like qwen3-embedding-0.6b --dtype f32 --layers 2: llama.cpp\'s ids (<|endoftext|> last), 20 vectors within cosine 0.9999, batched = one by one', { timeout: 400_000 }, () =>
    checkDecoderEmbedding({
      like: 'qwen3-embedding-0.6b', dtype: 'f32', layers: 2, min: 0.9999, lengthTolerance: 1e-3, inputs: ALL, alone: [1, 11], context: 512,
      config: { attention: 'causal', pooling: 'last', dense: [], normalize: true, decoder: { ...qwen3, layers: 2 } },
      without: { 'last-token pooling (mean instead)': (c) => ({ ...c, pooling: 'mean' }), 'causal attention (both ways instead)': (c) => ({ ...c, attention: 'bidirectional' }) },
      few: [2, 9, 13],
    }));

  test('make-model --like qwen3-embedding-0.6b --dtype q8_0 --layers 1: 20 vectors within cosine 0.999', { timeout: 400_000 }, () =>
    checkDecoderEmbedding({
      like: 'qwen3-embedding-0.6b', dtype: 'q8_0', layers: 1, min: 0.999, lengthTolerance: 1e-2, inputs: ALL, alone: [4], context: 512,
      config: { attention: 'causal', pooling: 'last', decoder: { ...qwen3, layers: 1 } },
      without: {}, few: [],
    }));
});

describe('make-model arguments for decoder embedding models', () => {
  test('refused before anything is written, saying what to pass', () => {
    const out = '/nonexistent/never.gguf';
    expect(() => writeSyntheticModel({ like: 'qwen3-embedding-0.6b', dtype: 'q8_0', out, seed: 1, tokenizer: 'llama3' })).toThrow(/carries its own real tokenizer; leave --tokenizer out/);
    expect(() => writeSyntheticModel({ like: 'embeddinggemma-300m', dtype: 'q3_K', out, seed: 1 })).toThrow(/--dtype q3_K: make-model writes .*q8_0/);
    expect(() => writeSyntheticModel({ like: 'qwen3-embed', dtype: 'q8_0', out, seed: 1 })).toThrow(/known shapes are .*qwen3-embedding-0\.6b, embeddinggemma-300m/);
  });
});
