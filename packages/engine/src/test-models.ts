// Test models for the engine's node tests (not part of the package's API).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { canonicalHfName, configFromGguf, configFromHf, loadTokenizer, type LlamaConfig, type Tokenizer } from '@intab/model';
import { readGgufLite } from '@intab/model/reference';
import { fixtureConfig, makeTensors } from '@intab/testing/fixtures';
import { realTokenizerFiles } from '@intab/testing/tokenizer-corpus';

/**
 * Qwen3's real tokenizer (151k byte-level BPE tokens) over a generated one-layer qwen2-shaped model with that
 * vocabulary and random weights (seed 7): every id the tokenizer can produce has an embedding row.
 */
export function qwen3VocabModel(): { tokenizer: Tokenizer; config: LlamaConfig; tensors: Map<string, Float32Array> } {
  const tokenizer = loadTokenizer({ ...realTokenizerFiles('qwen3'), file: 'qwen3/tokenizer.json' });
  const json = { ...fixtureConfig('qwen2'), vocab_size: tokenizer.vocabSize, num_hidden_layers: 1, tie_word_embeddings: true };
  const config = configFromHf(json, 'qwen3-vocab/config.json');
  const tensors = new Map<string, Float32Array>();
  for (const [name, t] of makeTensors(json, 7)) {
    const c = canonicalHfName(name);
    if (typeof c === 'string') tensors.set(c, t.data);
  }
  return { tokenizer, config, tensors };
}

/** ../shared/models/stories260K (INTAB_SHARED overrides ../shared). */
export const STORIES = join(process.env.INTAB_SHARED ? join(process.env.INTAB_SHARED, '/') : fileURLToPath(new URL('../../../../shared/', import.meta.url)), 'models/stories260K');

/** stories260K's real weights (f32, canonical names) from one of its GGUF files, and golden.json's greedy continuations. */
export function stories260K(file = 'stories260K.gguf'): { config: LlamaConfig; tensors: Map<string, Float32Array>; golden: { cases: { prompt: number[]; greedy: number[] }[] }; path: string } {
  const path = join(STORIES, file);
  const gguf = readGgufLite(new Uint8Array(readFileSync(path)), path);
  return {
    config: configFromGguf(gguf.metadata, path, gguf.tensorInfos),
    tensors: new Map([...gguf.tensors].map(([name, t]) => [name, t.data])),
    golden: JSON.parse(readFileSync(join(STORIES, 'golden.json'), 'utf8')),
    path,
  };
}
