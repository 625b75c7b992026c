// OpenAI's legacy text completions over a real in-thread Engine (CPU reference runner, tiny tokenizer): request
// mapping and its typed errors, the streamed text_completion objects and the whole one checked field by field against
// the same request run through engine.generate (seeded), the legacy logprobs shape, and abort (pages back in the pool).
import { beforeEach, describe, expect, test } from 'vitest';

import type { Chunk, GenerateRequest } from '@intab/engine/contract';
import { InvalidRequestError } from '@intab/engine/errors';
import type { ReferenceRunner } from '@intab/engine/reference';
import { wrapEngineApi, type IntabEngine } from './engine.ts';
import { textCompletionId, toCompletion, toCompletionChunks, toCompletionRequest, type Completion } from './openai-completions.ts';
import { referenceEngine } from './test-fixture.ts';

const sampling = { temperature: 1, seed: 7, logitBias: { 95: -100 } };
const prompt = 'Once upon a time';

let engine: IntabEngine;
let runner: ReferenceRunner;
beforeEach(() => {
  const r = referenceEngine();
  runner = r.runner;
  engine = wrapEngineApi(r.engine, r.info, { name: 'tiny-llama' });
});

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

async function reference(extra: Partial<GenerateRequest>): Promise<{ text: string; chunks: Chunk[]; last: Chunk }> {
  const chunks = await collect(engine.generate({ prompt, ...sampling, ...extra }));
  return { text: chunks.map((c) => c.text).join(''), chunks, last: chunks[chunks.length - 1] };
}

const meta = () => ({ id: textCompletionId(), created: 1_700_000_000, model: 'tiny-llama' });

describe('toCompletionRequest', () => {
  test('a text or id prompt (or a one-element array of either), the chat mapping for sampling, max_tokens 16 by default', () => {
    expect(toCompletionRequest({ prompt: 'hi' })).toEqual({ prompt: 'hi', maxTokens: 16 }); // OpenAI's default for /v1/completions
    expect(toCompletionRequest({ prompt: [1, 5, 9], max_tokens: 4 })).toEqual({ promptIds: [1, 5, 9], maxTokens: 4 });
    expect(toCompletionRequest({ prompt: ['hi'], max_tokens: 4 })).toEqual({ prompt: 'hi', maxTokens: 4 });
    expect(toCompletionRequest({ prompt: [[3, 4]], max_tokens: 4 })).toEqual({ promptIds: [3, 4], maxTokens: 4 });
    expect(
      toCompletionRequest({ prompt: 'x', max_tokens: 9, temperature: 0.5, top_p: 0.9, top_k: 40, seed: 42, stop: '\n', logprobs: 3, logit_bias: { '17': -100 }, frequency_penalty: 0.1, echo: false, suffix: null, best_of: 1, user: 'u', stream: true }),
    ).toEqual({ prompt: 'x', maxTokens: 9, temperature: 0.5, topP: 0.9, topK: 40, seed: 42, stop: ['\n'], logprobs: true, topLogprobs: 3, logitBias: { 17: -100 }, frequencyPenalty: 0.1 });
    expect(toCompletionRequest({ prompt: 'x', logprobs: 0 })).toMatchObject({ logprobs: true, topLogprobs: 0 });
  });

  test('what it cannot honour is an InvalidRequestError naming the field', () => {
    const field = (p: unknown) => {
      try {
        toCompletionRequest(p as never);
      } catch (e) {
        expect(e).toBeInstanceOf(InvalidRequestError);
        return (e as InvalidRequestError).field;
      }
      throw new Error('no error');
    };
    expect(field({ prompt: ['a', 'b'] })).toBe('prompt');
    expect(field({ prompt: [] })).toBe('prompt');
    expect(field({ prompt: [1, -2] })).toBe('prompt');
    expect(field({})).toBe('prompt');
    expect(field({ prompt: 'x', echo: true })).toBe('echo');
    expect(field({ prompt: 'x', suffix: 'end' })).toBe('suffix');
    expect(field({ prompt: 'x', best_of: 3 })).toBe('best_of');
    expect(field({ prompt: 'x', logprobs: 21 })).toBe('logprobs');
    expect(field({ prompt: 'x', logprobs: true })).toBe('logprobs');
    expect(field({ prompt: 'x', temperature: 'hot' })).toBe('temperature');
    expect(field({ prompt: 'x', n: 2 })).toBe('n');
    expect(field(null)).toBe('request');
    expect(field([{ prompt: 'x' }])).toBe('request');
    expect(field({ prompt: [1, , 2] })).toBe('prompt'); // a hole is refused, not skipped
    expect(field({ prompt: [2 ** 60] })).toBe('prompt');
    expect(field({ prompt: 'x', stream: 'yes' })).toBe('stream');
    expect(field({ prompt: 'x', logprobs: 2.5 })).toBe('logprobs');
    expect(field({ prompt: 'x', max_tokens: 0 })).toBe('max_tokens');
    expect(field({ prompt: 'x', stop: ['a', ''] })).toBe('stop[1]');
    expect(field({ prompt: 'x', logit_bias: { x: 1 } })).toBe('logit_bias["x"]');
  });
});

describe('text completions', () => {
  test('streamed: one object per engine chunk, the finish object, the usage object; legacy logprobs with text offsets', async () => {
    const ref = await reference({ maxTokens: 10, logprobs: true, topLogprobs: 2 });
    const m = meta();
    const request = toCompletionRequest({ prompt, max_tokens: 10, logprobs: 2, temperature: 1, seed: 7, logit_bias: { '95': -100 } });
    const chunks = await collect(toCompletionChunks(engine.generate(request), m, { includeUsage: true, logprobs: true }));
    expect(m.id).toMatch(/^cmpl-[A-Za-z0-9]{24}$/);
    for (const c of chunks) expect([c.id, c.object, c.created, c.model]).toEqual([m.id, 'text_completion', m.created, 'tiny-llama']);
    const content = chunks.slice(0, -2);
    const [finish, usage] = chunks.slice(-2);
    expect(content.length).toBe(ref.chunks.length);
    let offset = 0;
    content.forEach((c, i) => {
      expect(c.usage).toBeNull();
      const lp = ref.chunks[i].logprobs!;
      expect(c.choices).toEqual([
        {
          index: 0,
          text: ref.chunks[i].text,
          finish_reason: null,
          logprobs: {
            tokens: lp.map((t) => t.text),
            token_logprobs: lp.map((t) => t.logprob),
            top_logprobs: lp.map((t) => Object.fromEntries(t.top!.map((a) => [a.text, a.logprob]))),
            text_offset: lp.map((t) => ((offset += t.text.length), offset - t.text.length)),
          },
        },
      ]);
    });
    expect(content.map((c) => c.choices[0].text).join('')).toBe(ref.text);
    expect(finish.choices).toEqual([{ index: 0, text: '', logprobs: null, finish_reason: 'length' }]);
    expect(usage.choices).toEqual([]);
    expect(usage.usage).toMatchObject({ prompt_tokens: ref.last.metrics!.promptTokens, completion_tokens: 10, total_tokens: ref.last.metrics!.promptTokens + 10 });
  });

  test('whole: the same text, finish reason and usage; without logprobs they are null; no usage field while streaming', async () => {
    const ref = await reference({ maxTokens: 8 });
    const request = toCompletionRequest({ prompt, max_tokens: 8, temperature: 1, seed: 7, logit_bias: { '95': -100 } });
    const whole = await toCompletion(engine.generate(request), meta());
    expect(whole).toMatchObject({ object: 'text_completion', choices: [{ index: 0, text: ref.text, logprobs: null, finish_reason: 'length' }] });
    expect(whole.usage).toMatchObject({ completion_tokens: 8, prompt_tokens: ref.last.metrics!.promptTokens });
    const streamed: Completion[] = await collect(toCompletionChunks(engine.generate(request), meta()));
    for (const c of streamed) expect('usage' in c).toBe(false);
    expect(streamed.map((c) => c.choices[0].text).join('')).toBe(ref.text);
  });

  test('without max_tokens a completion runs 16 tokens, OpenAI\'s default for legacy completions', async () => {
    const request = toCompletionRequest({ prompt, temperature: 1, seed: 7, logit_bias: { '95': -100 } });
    const ref = await reference({ maxTokens: 16 });
    const whole = await toCompletion(engine.generate(request), meta());
    expect(whole.choices).toEqual([{ index: 0, text: ref.text, logprobs: null, finish_reason: 'length' }]);
    expect(whole.usage).toMatchObject({ completion_tokens: 16, prompt_tokens: ref.last.metrics!.promptTokens });
  });

  test('an aborted stream just ends (no finish object) and its pages are freed; a whole one rejects with the reason', async () => {
    const controller = new AbortController();
    const request = toCompletionRequest({ prompt, max_tokens: 150, temperature: 1, seed: 7 });
    const seen: Completion[] = [];
    for await (const c of toCompletionChunks(engine.generate(request, { signal: controller.signal }), meta())) {
      seen.push(c);
      if (seen.length === 2) controller.abort();
    }
    expect(seen.every((c) => c.choices[0].finish_reason === null)).toBe(true);
    expect(runner.kv.availablePageCount).toBe(runner.kv.pages);
    const gone = new AbortController();
    gone.abort(new Error('client gone'));
    await expect(toCompletion(engine.generate(request, { signal: gone.signal }), meta(), { signal: gone.signal })).rejects.toThrow('client gone');
  });
});
