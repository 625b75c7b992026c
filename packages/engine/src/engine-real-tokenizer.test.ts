// Batching with a real tokenizer: a generated qwen2-shaped model whose vocabulary is Qwen3's (151k ids,
// byte-level BPE) served by the CPU reference runner. Text prompts of different lengths, joining at
// different steps, give the same ids and text as each run alone; a chat request goes through Qwen3's own
// template; stop strings cut text that spans tokens.
import { beforeAll, describe, expect, test } from 'vitest';
import type { LlamaConfig, Tokenizer } from '@intab/model';
import type { GenerateRequest } from './contract.ts';
import { Engine } from './engine.ts';
import { ReferenceRunner } from './reference/runner.ts';
import { gemma3VocabModel, qwen3VocabModel } from './test-models.ts';
import { collect } from './test-streams.ts';

let tokenizer: Tokenizer;
let config: LlamaConfig;
let tensors: Map<string, Float32Array>;

beforeAll(() => {
  ({ tokenizer, config, tensors } = qwen3VocabModel());
});

function engine(): { engine: Engine; runner: ReferenceRunner } {
  const runner = new ReferenceRunner(config, (n) => tensors.get(n), { pages: 64, pageSize: 16, maxBatch: 8 });
  return { runner, engine: new Engine({ runner, tokenizer, options: { seed: 5, maxTokensPerStep: 8 } }) };
}

describe('engine with a real tokenizer (Qwen3 vocabulary)', () => {
  const requests: GenerateRequest[] = [
    { prompt: 'Once upon a time, in a tab far away,', maxTokens: 10, temperature: 0, ignoreEos: true },
    { prompt: '数字 1234 and emoji 🧪🔥 — mixed text', maxTokens: 7, temperature: 0.9, seed: 3, ignoreEos: true },
    { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'What is WebGPU?' }], maxTokens: 9, temperature: 0.7, topP: 0.9, seed: 11, ignoreEos: true },
    { prompt: 'def f(x):\n    return x * 2\n', maxTokens: 5, temperature: 0, ignoreEos: true },
  ];

  test('concurrent requests joining at different steps equal each run alone, ids and text', { timeout: 60_000 }, async () => {
    const alone: { ids: number[]; text: string }[] = [];
    for (const r of requests) {
      const { engine: e } = engine();
      alone.push(await collect(e, await e.start(r)));
      await e.destroy();
    }
    const { engine: e, runner } = engine();
    const first = await e.start(requests[0]);
    const firstChunk = await e.next(first); // request 0 is decoding before the others arrive
    const rest = await Promise.all(requests.slice(1).map((r) => e.start(r)));
    const outs = await Promise.all([collect(e, first), ...rest.map((id) => collect(e, id))]);
    outs[0] = { ...outs[0], ids: [...firstChunk.ids, ...outs[0].ids], text: firstChunk.text + outs[0].text };
    outs.forEach((o, i) => {
      expect(o.ids, `request ${i}`).toEqual(alone[i].ids);
      expect(o.text, `request ${i}`).toBe(alone[i].text);
      expect(o.text).toBe(tokenizer.decode(o.ids, { skipSpecialTokens: true }));
    });
    expect(runner.log.some((s) => s.length >= 3)).toBe(true); // they really shared steps
    await e.destroy();
  });

  test('a stop string spanning tokens ends the stream and is never emitted', { timeout: 60_000 }, async () => {
    const { engine: e } = engine();
    const free = await collect(e, await e.start({ prompt: 'The quick brown fox', maxTokens: 24, temperature: 0, ignoreEos: true }));
    // Stop at a piece of what greedy decoding produces anyway: the last 3 characters of its 6th token onward.
    const pieceStart = tokenizer.decode(free.ids.slice(0, 5)).length;
    const stop = free.text.slice(Math.max(0, pieceStart - 2), pieceStart + 3);
    expect(stop.length).toBeGreaterThan(1);
    const stopped = await collect(e, await e.start({ prompt: 'The quick brown fox', maxTokens: 24, temperature: 0, ignoreEos: true, stop: [stop] }));
    expect(stopped.last.finishReason).toBe('stop');
    expect(stopped.text).toBe(free.text.slice(0, free.text.indexOf(stop)));
    expect(stopped.text.includes(stop)).toBe(false);
    await e.destroy();
  });
});

describe('engine with a tokenizer that has more ids than the model has logits (Gemma 3: 262,145 and 262,144)', () => {
  test('a JSON-schema request decodes: the grammar vocabulary stops at the logits, and the text parses', { timeout: 120_000 }, async () => {
    const m = gemma3VocabModel();
    expect([m.tokenizer.vocabSize, m.config.vocab]).toEqual([262_145, 262_144]);
    const runner = new ReferenceRunner(m.config, (n) => m.tensors.get(n), { pages: 16, pageSize: 16, maxBatch: 2 });
    const e = new Engine({ runner, tokenizer: m.tokenizer, options: { seed: 5 } });
    const schema = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'], additionalProperties: false };
    const out = await collect(e, await e.start({ prompt: 'Answer in JSON:', maxTokens: 12, temperature: 0, responseFormat: { type: 'json_schema', schema } }));
    expect(JSON.parse(out.text)).toHaveProperty('ok');
    await e.destroy();
  });
});
