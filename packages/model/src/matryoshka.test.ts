// Matryoshka training by the model's name (matryoshka.ts): the names converted files carry for the models whose cards
// state it, and none for models that were not trained for it (nomic-embed-text v1, all-MiniLM, bge); the configs read
// from GGUF metadata (general.name, general.basename + general.version) and a folder's _name_or_path say it, and the
// facts the engine checks `dimensions` against follow (a reranker never: its outputs are logits).
import { describe, expect, test } from 'vitest';
import { decoderEmbeddingConfigFromGguf, decoderEmbeddingFacts } from './decoder-embedding-config.ts';
import { encoderConfigFromGguf, encoderConfigFromHf, encoderFacts } from './encoder-config.ts';
import { ggufModelNames, trainedForMatryoshka } from './matryoshka.ts';

const NOMIC_GGUF = {
  'general.architecture': 'nomic-bert',
  'nomic-bert.embedding_length': 64,
  'nomic-bert.feed_forward_length': 128,
  'nomic-bert.block_count': 1,
  'nomic-bert.attention.head_count': 4,
  'nomic-bert.attention.layer_norm_epsilon': 1e-12,
  'nomic-bert.context_length': 2048,
  'nomic-bert.attention.causal': false,
  'nomic-bert.pooling_type': 1,
  'nomic-bert.rope.freq_base': 1000,
  'tokenizer.ggml.token_type_count': 2,
  'tokenizer.ggml.tokens': Array.from({ length: 16 }, (_, i) => `t${i}`),
};

describe('Matryoshka by name', () => {
  test("the names of models trained for it, as converted files spell them; not their untrained siblings'", () => {
    for (const n of ['nomic-embed-text-v1.5', 'Nomic Embed Text v1.5', 'embeddinggemma-300m', 'EmbeddingGemma 300m', 'Qwen3-Embedding-0.6B', 'mxbai-embed-large-v1', 'snowflake-arctic-embed-m-v1.5', 'jina-embeddings-v3']) {
      expect(trainedForMatryoshka([n]), n).toBe(true);
    }
    for (const n of ['nomic-embed-text-v1', 'all-MiniLM-L6-v2', 'bge-small-en-v1.5', 'snowflake-arctic-embed-m', 'synthetic f32 seed 1']) {
      expect(trainedForMatryoshka([n]), n).toBe(false);
    }
    expect(trainedForMatryoshka([undefined, 3])).toBe(false);
    expect(ggufModelNames({ 'general.basename': 'nomic-embed-text', 'general.version': 'v1.5' })).toEqual(['nomic-embed-text-v1.5']);
  });

  test('the configs read it from GGUF metadata and config.json, and the facts follow', () => {
    expect(encoderFacts(encoderConfigFromGguf(NOMIC_GGUF, 'n.gguf')).matryoshka).toBe(false);
    expect(encoderFacts(encoderConfigFromGguf({ ...NOMIC_GGUF, 'general.basename': 'nomic-embed-text', 'general.version': 'v1.5' }, 'n.gguf')).matryoshka).toBe(true);
    expect(encoderFacts(encoderConfigFromGguf({ ...NOMIC_GGUF, 'general.name': 'nomic-embed-text-v1' }, 'n.gguf')).matryoshka).toBe(false);
    const hf = { model_type: 'nomic_bert', n_embd: 64, n_inner: 128, n_layer: 1, n_head: 4, vocab_size: 16, n_positions: 2048, layer_norm_epsilon: 1e-12, rotary_emb_base: 1000 };
    expect(encoderFacts(encoderConfigFromHf({ ...hf, _name_or_path: 'nomic-ai/nomic-embed-text-v1.5' }, 'config.json')).matryoshka).toBe(true);
    expect(encoderFacts(encoderConfigFromHf(hf, 'config.json')).matryoshka).toBe(false);
  });

  test('a decoder embedding model named Qwen3-Embedding is trained for it', () => {
    const qwen = {
      'general.architecture': 'qwen3',
      'general.name': 'Qwen3 Embedding 0.6B',
      'qwen3.pooling_type': 3,
      'qwen3.embedding_length': 64,
      'qwen3.feed_forward_length': 128,
      'qwen3.block_count': 1,
      'qwen3.attention.head_count': 4,
      'qwen3.attention.head_count_kv': 2,
      'qwen3.attention.key_length': 16,
      'qwen3.attention.value_length': 16,
      'qwen3.attention.layer_norm_rms_epsilon': 1e-6,
      'qwen3.context_length': 512,
      'qwen3.rope.freq_base': 1e6,
      'tokenizer.ggml.tokens': Array.from({ length: 16 }, (_, i) => `t${i}`),
    };
    expect(decoderEmbeddingFacts(decoderEmbeddingConfigFromGguf(qwen, 'q.gguf')).matryoshka).toBe(true);
    expect(decoderEmbeddingFacts(decoderEmbeddingConfigFromGguf({ ...qwen, 'general.name': 'some qwen3 finetune' }, 'q.gguf')).matryoshka).toBe(false);
  });
});
