// Node-tier fixture for this package's tests: a real in-thread Engine over the CPU ReferenceRunner (the
// 'llama' random-weight fixture model, vocab 128) with a tiny real tokenizer (byte-level BPE over printable
// ASCII, ChatML special tokens and a ChatML chat template), so chat requests run end to end without a GPU.

import { Engine, type ModelInfo } from '@intab/engine';
import { ReferenceRunner } from '@intab/engine/reference';
import { loadTokenizer, type Tokenizer } from '@intab/model';
import { fixtureWeights } from '@intab/testing/fixtures';
import { tinyChatTokenizerFiles } from '@intab/testing/tiny-tokenizer';
import type { RelayReply } from './openai-server.ts';

/** ids 0..93 are '!'..'~', 94 is ' ' (Ġ), 95 is '\n' (Ċ), 96/97 are <|im_start|>/<|im_end|>; 98..127 decode to nothing. */
export function tinyChatTokenizer(): Tokenizer {
  return loadTokenizer(tinyChatTokenizerFiles());
}

/**
 * A fresh in-thread engine on the CPU reference runner; `pages` sizes its simulated KV pool, `contextLength` stretches
 * the fixture's 256-token context (a chat with tools: the generic format writes them into the system prompt).
 */
export function referenceEngine(options: { pages?: number; maxQueuedChunks?: number; contextLength?: number } = {}): { engine: Engine; runner: ReferenceRunner; info: ModelInfo } {
  const fixture = fixtureWeights('llama');
  const tensors = fixture.tensors;
  const config = options.contextLength ? { ...fixture.config, maxContext: options.contextLength } : fixture.config;
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
    // Its ChatML template knows no tools: intab writes them into the system message.
    toolFormat: 'generic',
    weightBytes: 0,
    kvPages: runner.kv.pages,
    adapter: 'cpu reference',
  };
  const engine = new Engine({ runner, tokenizer, info, options: { seed: 1, maxQueuedChunks: options.maxQueuedChunks } });
  return { engine, runner, info };
}

/**
 * The Service Worker's end of one relayed request: `port` goes to the page half (answerRelayed, or a page's container
 * with the request), `replies` collects what the page sends back, `ended` settles when its end came, `body()` joins
 * the body pieces, and close() closes the Service Worker's end.
 */
export function relayChannel(): { port: MessagePort; replies: RelayReply[]; ended: Promise<void>; body(): string; close(): void } {
  const { port1, port2 } = new MessageChannel();
  const replies: RelayReply[] = [];
  const ended = new Promise<void>((resolve) => {
    port1.onmessage = (m: MessageEvent<RelayReply>) => {
      replies.push(m.data);
      if (m.data.type === 'end') resolve();
    };
  });
  return { port: port2, replies, ended, body: () => replies.map((r) => (r.type === 'body' ? r.chunk : '')).join(''), close: () => port1.close() };
}
