// EmbeddingGemma against llama.cpp (test-decoder-embed.ts): `intab make-model --like embeddinggemma-300m` writes
// llama.cpp's `gemma-embedding` (Gemma 3's layer attending both ways, a symmetric window of 512 on the sliding layers,
// mean pooling, dense_2 768 → 3072 and dense_3 3072 → 768) with the real Gemma 3 tokenizer wrapping <bos> … <eos>, cut to
// two layers (the first sliding, the last global: llama.cpp needs a global layer). Besides the 20 inputs, one text of
// ~460 tokens, so that the window (±256 positions) cuts attention; each part of the family is shown to matter.

import { describe, test } from 'vitest';
import type { LlamaConfig } from '@intab/model';
import { ALL, LONG, checkDecoderEmbedding } from './test-decoder-embed.ts';

const gemma: Partial<LlamaConfig> = { arch: 'gemma3', hidden: 768, heads: 3, kvHeads: 1, headDim: 256, ffn: 1152, vocab: 262145, qkNorm: true, postNorms: true, activation: 'gelu_tanh', slidingWindow: 512, slidingLayers: [0], maxContext: 2048, attnScale: 1 / 16, bosId: 2, eosIds: [1] };
const dense = [{ name: 'dense_2.weight', rows: 3072, cols: 768 }, { name: 'dense_3.weight', rows: 768, cols: 3072 }];

describe('EmbeddingGemma: intab embeds as llama.cpp does', () => {
  test('make-model --like embeddinggemma-300m --dtype f32 --layers 2: llama.cpp\'s ids (<bos> … <eos>), 21 vectors within cosine 0.9999, batched = one by one', { timeout: 400_000 }, () =>
    checkDecoderEmbedding({
      like: 'embeddinggemma-300m', dtype: 'f32', layers: 2, min: 0.9999, lengthTolerance: 1e-3, inputs: [...ALL, LONG], alone: [1, 11, 20], context: 1024,
      config: { attention: 'bidirectional', pooling: 'mean', dense, normalize: true, decoder: { ...gemma, layers: 2, rope: { theta: 1000000, style: 'neox', rotaryDim: 256, localTheta: 10000 } } },
      without: {
        'attention both ways (causal instead)': (c) => ({ ...c, attention: 'causal' }),
        'mean pooling (last token instead)': (c) => ({ ...c, pooling: 'last' }),
        'the dense projections': (c) => ({ ...c, dense: [] }),
        'the symmetric window (the whole sequence instead)': (c) => ({ ...c, decoder: { ...c.decoder, slidingWindow: null } }),
      },
      few: [LONG],
    }));

  test('make-model --like embeddinggemma-300m --dtype q8_0 --layers 2: 21 vectors within cosine 0.999', { timeout: 400_000 }, () =>
    checkDecoderEmbedding({
      like: 'embeddinggemma-300m', dtype: 'q8_0', layers: 2, min: 0.999, lengthTolerance: 1e-2, inputs: [...ALL, LONG], alone: [0, 7], context: 1024,
      config: { attention: 'bidirectional', pooling: 'mean', dense, decoder: { ...gemma, layers: 2 } },
      without: {}, few: [],
    }));
});
