// Node-tier fixture for this package's tests: a real in-thread Engine over the CPU ReferenceRunner (the
// 'llama' random-weight fixture model, vocab 128) with a tiny real tokenizer (byte-level BPE over printable
// ASCII, ChatML special tokens and a ChatML chat template), so chat requests run end to end without a GPU.

import { Engine, type ModelInfo } from '@intab/engine';
import { ReferenceRunner } from '@intab/engine/reference';
import { loadTokenizer, type Tokenizer } from '@intab/model';
import { fixtureWeights } from '@intab/testing/fixtures';
import { tinyChatTokenizerFiles } from '@intab/testing/tiny-tokenizer';

/** ids 0..93 are '!'..'~', 94 is ' ' (Ġ), 95 is '\n' (Ċ), 96/97 are <|im_start|>/<|im_end|>; 98..127 decode to nothing. */
export function tinyChatTokenizer(): Tokenizer {
  return loadTokenizer(tinyChatTokenizerFiles());
}

/** A fresh in-thread engine on the CPU reference runner; `pages` sizes its simulated KV pool. */
export function referenceEngine(options: { pages?: number; maxQueuedChunks?: number } = {}): { engine: Engine; runner: ReferenceRunner; info: ModelInfo } {
  const { config, tensors } = fixtureWeights('llama');
  const runner = new ReferenceRunner(config, (n) => tensors.get(n), { pages: options.pages ?? 64, pageSize: 16 });
  const tokenizer = tinyChatTokenizer();
  const info: ModelInfo = {
    backend: { name: 'webgpu', reason: 'a test fixture: the CPU reference runner stands in for it' },
    arch: config.arch,
    layers: config.layers,
    hidden: config.hidden,
    vocab: config.vocab,
    contextLength: config.maxContext,
    hasTokenizer: true,
    hasChatTemplate: true,
    weightBytes: 0,
    kvPages: runner.kv.pages,
    adapter: 'cpu reference',
  };
  const engine = new Engine({ runner, tokenizer, info, options: { seed: 1, maxQueuedChunks: options.maxQueuedChunks } });
  return { engine, runner, info };
}
