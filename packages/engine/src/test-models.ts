// Test models for the engine's node tests (not part of the package's API).
import { configFromHf, loadTokenizer, type LlamaConfig, type Tokenizer } from '@intab/model';
import { canonicalHfName, fixtureConfig, makeTensors } from '@intab/model/reference';
import { realTokenizerFiles } from '../../model/src/tokenizer/test-corpus.ts';

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
