// The OpenAI-compatible API over a real in-thread Engine (CPU reference runner, tiny ChatML tokenizer): every
// field of the streamed chat.completion.chunk objects and of the non-streamed chat.completion is checked
// against the same request run through engine.generate (seeded, so both runs give the same tokens), plus
// request mapping, typed errors, abort and break (pages back in the pool).
import { beforeEach, describe, expect, test, vi } from 'vitest';

import type { Chunk, GenerateRequest } from '@intab/engine/contract';
import { InvalidRequestError } from '@intab/engine/errors';
import type { Engine } from '@intab/engine';
import type { ReferenceRunner } from '@intab/engine/reference';
import { wrapEngineApi, type IntabEngine } from './engine.ts';
import { ignoredFields, toGenerateRequest, type ChatCompletion, type ChatCompletionChunk } from './openai.ts';
import { serveOpenAI } from './openai-server.ts';
import { relayRequest, type RelayClients } from './service-worker.ts';
import { decodeSSE, encodeSSE } from './sse.ts';
import { referenceEngine } from './test-fixture.ts';

const messages = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Say something!' },
];
/** Seeded sampling: the same tokens on every run. The fixture model loves '\n' (id 95): bias it away for varied text. */
const sampling = { temperature: 1, seed: 7 };
const chatSampling = { ...sampling, logit_bias: { '95': -100 } };

let engine: IntabEngine;
let inner: Engine;
let runner: ReferenceRunner;
beforeEach(() => {
  const r = referenceEngine();
  inner = r.engine;
  runner = r.runner;
  engine = wrapEngineApi(r.engine, r.info, { name: 'tiny-llama' });
});

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

/** The same request through engine.generate: the reference for every field. */
async function reference(extra: Partial<GenerateRequest>): Promise<{ text: string; ids: number[]; chunks: Chunk[]; last: Chunk }> {
  const chunks = await collect(engine.generate({ messages, ...sampling, logitBias: { 95: -100 }, ...extra }));
  return { text: chunks.map((c) => c.text).join(''), ids: chunks.flatMap((c) => c.ids), chunks, last: chunks[chunks.length - 1] };
}

const utf8 = (s: string) => Array.from(new TextEncoder().encode(s));

describe('toGenerateRequest', () => {
  test('maps every OpenAI field to the engine request', () => {
    expect(
      toGenerateRequest({
        model: 'x',
        messages: [
          { role: 'developer', content: 'be brief' },
          { role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] },
          { role: 'assistant', content: null },
        ],
        max_tokens: 5,
        max_completion_tokens: 9,
        temperature: 0.5,
        top_p: 0.9,
        top_k: 40,
        min_p: 0.05,
        frequency_penalty: 0.1,
        presence_penalty: 0.2,
        repetition_penalty: 1.1,
        logit_bias: { '17': -100, '3': 2.5 },
        seed: 42,
        stop: '\n\n',
        logprobs: true,
        top_logprobs: 3,
        n: 1,
        stream: true,
        stream_options: { include_usage: true },
      }),
    ).toEqual({
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'ab' },
        { role: 'assistant', content: '' },
      ],
      maxTokens: 9,
      temperature: 0.5,
      topP: 0.9,
      topK: 40,
      minP: 0.05,
      frequencyPenalty: 0.1,
      presencePenalty: 0.2,
      repetitionPenalty: 1.1,
      logitBias: { 17: -100, 3: 2.5 },
      seed: 42,
      stop: ['\n\n'],
      logprobs: true,
      topLogprobs: 3,
    });
    expect(toGenerateRequest({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 4, temperature: null, stop: ['a', 'b'] })).toEqual({
      messages: [{ role: 'user', content: 'hi' }],
      maxTokens: 4,
      stop: ['a', 'b'],
    });
  });

  test('typed errors name the field', () => {
    const err = (p: unknown) => {
      try {
        toGenerateRequest(p as never);
      } catch (e) {
        return e as InvalidRequestError;
      }
      throw new Error('no error');
    };
    const n = err({ messages, n: 2 });
    expect(n).toBeInstanceOf(InvalidRequestError);
    expect([n.name, n.field, n.value]).toEqual(['InvalidRequestError', 'n', '2']);
    expect(n.message).toContain('send n requests');
    expect(err({ messages, top_logprobs: 2 }).field).toBe('top_logprobs');
    expect(err({ messages, logit_bias: { abc: 1 } }).field).toBe('logit_bias["abc"]');
    expect(err({ messages: [] }).field).toBe('messages');
    expect(err({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }] }).field).toBe('messages[0].content[0]');
    expect(err({ messages, temperature: 'hot' }).field).toBe('temperature');
    expect(err({ messages, stop: [1] }).field).toBe('stop[0]');
    expect(err({ messages, response_format: { type: 'xml' } }).field).toBe('response_format.type');
    expect(err({ messages, response_format: { type: 'json_schema' } }).field).toBe('response_format.json_schema');
  });

  test('wrong types and out-of-range values are refused naming the OpenAI field, the bound in the message', () => {
    const err = (extra: Record<string, unknown>) => {
      try {
        toGenerateRequest({ messages, ...extra } as never);
      } catch (e) {
        expect(e).toBeInstanceOf(InvalidRequestError);
        return [(e as InvalidRequestError).field, (e as Error).message];
      }
      throw new Error(`accepted: ${JSON.stringify(extra)}`);
    };
    const cases: [Record<string, unknown>, string, string][] = [
      [{ temperature: 101 }, 'temperature', 'from 0 to 100'],
      [{ temperature: NaN }, 'temperature', 'from 0 to 100'],
      [{ top_p: 0 }, 'top_p', 'temperature: 0'],
      [{ top_k: -2 }, 'top_k', '-1 or 0 = off'],
      [{ top_k: 1.5 }, 'top_k', 'integer'],
      [{ min_p: 1.5 }, 'min_p', 'from 0 to 1'],
      [{ frequency_penalty: 2.5 }, 'frequency_penalty', 'from -2 to 2'],
      [{ presence_penalty: -3 }, 'presence_penalty', 'from -2 to 2'],
      [{ repetition_penalty: 0 }, 'repetition_penalty', 'from 0.01 to 10'],
      [{ max_tokens: 0 }, 'max_tokens', 'a positive integer'],
      [{ max_tokens: 2.5, max_completion_tokens: 4 }, 'max_tokens', 'a positive integer'], // checked though overridden
      [{ max_completion_tokens: '8' }, 'max_completion_tokens', 'a positive integer'],
      [{ seed: 1.5 }, 'seed', 'an integer'],
      [{ logprobs: 'yes' }, 'logprobs', 'true or false'],
      [{ top_logprobs: 21, logprobs: true }, 'top_logprobs', 'from 0 to 20'],
      [{ logit_bias: [1] }, 'logit_bias', '{ "<token id>": bias }'],
      [{ logit_bias: new Map([[5, 1]]) }, 'logit_bias', '{ "<token id>": bias }'], // not read as an empty object
      [{ logit_bias: { '1e2': 1 } }, 'logit_bias["1e2"]', 'a token id'],
      [{ logit_bias: JSON.parse('{"__proto__": 1}') }, 'logit_bias["__proto__"]', 'a token id'], // an own key, as JSON.parse makes it
      [{ logit_bias: { '7': 100.5 } }, 'logit_bias["7"]', 'from -100 to 100'],
      [{ logit_bias: Object.fromEntries(Array.from({ length: 1025 }, (_, i) => [String(i), 1])) }, 'logit_bias', 'at most 1024'],
      [{ stop: '' }, 'stop', 'a non-empty string'],
      [{ stop: ['a', ''] }, 'stop[1]', 'a non-empty string'],
      [{ stop: ['x'.repeat(1025)] }, 'stop[0]', 'at most 1024 characters'],
      [{ stop: Array.from({ length: 17 }, () => 'x') }, 'stop', 'at most 16 stop strings'],
      [{ stream: 'yes' }, 'stream', 'true or false'],
      [{ stream_options: 'x' }, 'stream_options', 'include_usage'],
      [{ stream_options: { include_usage: 1 } }, 'stream_options.include_usage', 'true or false'],
      [{ model: 5 }, 'model', 'a string'],
      [{ messages: [{ role: 'user', content: 'x', name: 5 }] }, 'messages[0].name', 'a string'],
      [{ messages: [{ content: 'x' }] }, 'messages[0].role', "one of 'system', 'user', 'assistant', 'tool' or 'developer'"],
      [{ response_format: { type: 'json_schema', json_schema: { schema: [] } } }, 'response_format.json_schema.schema', 'a JSON Schema'],
      [{ response_format: { type: 'json_schema', json_schema: { schema: {}, strict: 'yes' } } }, 'response_format.json_schema.strict', 'true or false'],
    ];
    for (const [extra, field, bound] of cases) expect(err(extra), JSON.stringify(extra)).toEqual([field, expect.stringContaining(bound)]);
    // A sparse array's hole is refused, not skipped.
    expect(err({ messages: [{ role: 'user', content: 'x' }, , { role: 'user', content: 'y' }] })[0]).toBe('messages[1]');
    // A schema nested past the grammar's nesting budget is refused here, before it is cloned to the worker.
    let deep: unknown = {};
    for (let i = 0; i < 200_000; i++) deep = { a: deep };
    expect(err({ response_format: { type: 'json_schema', json_schema: { schema: deep } } })).toEqual(['response_format.json_schema.schema', expect.stringContaining('at most 128 levels deep')]);
    const loop: Record<string, unknown> = {};
    loop.self = loop;
    expect(err({ response_format: { type: 'json_schema', json_schema: { schema: loop } } })[1]).toContain('contains itself');
  });

  test('lenient where compatible servers are: top_k -1 is off, an int64 seed folds to the 32 bits the RNG reads, null is the default', () => {
    expect(toGenerateRequest({ messages, top_k: -1 })).toEqual({ messages });
    expect(toGenerateRequest({ messages, seed: 12345678901234567890 }).seed).toBe(12345678901234567890 >>> 0);
    expect(toGenerateRequest({ messages, seed: -7 }).seed).toBe(-7);
    const nulls = { temperature: null, top_p: null, stop: null, logit_bias: null, seed: null, n: null, stream: null, model: null, response_format: null, top_logprobs: null };
    expect(toGenerateRequest({ messages, ...nulls } as never)).toEqual({ messages });
    expect(toGenerateRequest({ messages, temperature: 3, min_p: 0.1 })).toMatchObject({ temperature: 3, minP: 0.1 }); // past OpenAI's 2: min_p's recipe
  });

  test('response_format maps to the constrained formats (a schema is always enforced; strict: false only drops what cannot be)', () => {
    const schema = { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] };
    expect(toGenerateRequest({ messages, response_format: { type: 'json_schema', json_schema: { name: 'x', schema, strict: true } } }).responseFormat).toEqual({ type: 'json_schema', schema, strict: true });
    expect(toGenerateRequest({ messages, response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } }).responseFormat).toEqual({ type: 'json_schema', schema, strict: true });
    expect(toGenerateRequest({ messages, response_format: { type: 'json_schema', json_schema: { name: 'x', schema, strict: false } } }).responseFormat).toEqual({ type: 'json_schema', schema, strict: false });
    expect(toGenerateRequest({ messages, response_format: { type: 'json_object' } }).responseFormat).toEqual({ type: 'json_object' });
    expect(toGenerateRequest({ messages, response_format: { type: 'text' } }).responseFormat).toBeUndefined();
  });
});

describe('chat.completions.create, streaming', () => {
  test('chunks field by field, with logprobs and the usage chunk', async () => {
    const ref = await reference({ maxTokens: 10, logprobs: true, topLogprobs: 2 });
    expect(ref.last.finishReason).toBe('length');
    const before = Math.floor(Date.now() / 1000);
    const stream = await engine.chat.completions.create({
      messages,
      ...chatSampling,
      max_tokens: 10,
      logprobs: true,
      top_logprobs: 2,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = await collect(stream);
    const after = Math.floor(Date.now() / 1000);

    const first = chunks[0];
    expect(first.id).toMatch(/^chatcmpl-[A-Za-z0-9]{24}$/);
    expect(first.created).toBeGreaterThanOrEqual(before);
    expect(first.created).toBeLessThanOrEqual(after);
    for (const c of chunks) {
      expect(Object.keys(c).sort()).toEqual(['choices', 'created', 'id', 'model', 'object', 'usage']);
      expect([c.id, c.object, c.created, c.model]).toEqual([first.id, 'chat.completion.chunk', first.created, 'tiny-llama']);
    }
    const content = chunks.slice(0, -2);
    const [finish, usage] = chunks.slice(-2);
    // Content chunks: one per engine chunk, role on the first only.
    expect(content.length).toBe(ref.chunks.length);
    content.forEach((c, i) => {
      expect(c.usage).toBeNull();
      expect(c.choices.length).toBe(1);
      const choice = c.choices[0];
      expect(Object.keys(choice).sort()).toEqual(['delta', 'finish_reason', 'index', 'logprobs']);
      expect(choice.index).toBe(0);
      expect(choice.finish_reason).toBeNull();
      expect(choice.delta).toEqual(i === 0 ? { role: 'assistant', content: ref.chunks[0].text, refusal: null } : { content: ref.chunks[i].text });
      expect(choice.logprobs).toEqual({
        content: ref.chunks[i].logprobs!.map((t) => ({
          token: t.text,
          logprob: t.logprob,
          bytes: utf8(t.text),
          top_logprobs: t.top!.map((a) => ({ token: a.text, logprob: a.logprob, bytes: utf8(a.text) })),
        })),
        refusal: null,
      });
      expect(choice.logprobs!.content!.every((t) => t.top_logprobs.length === 2)).toBe(true);
    });
    expect(content.map((c) => c.choices[0].delta.content).join('')).toBe(ref.text);
    // The last choice chunk: empty delta, the finish reason.
    expect(finish.choices).toEqual([{ index: 0, delta: {}, logprobs: null, finish_reason: 'length' }]);
    expect(finish.usage).toBeNull();
    // Usage: its own chunk, no choices.
    expect(usage.choices).toEqual([]);
    expect(usage.usage).toEqual({
      prompt_tokens: ref.last.metrics!.promptTokens,
      completion_tokens: 10,
      total_tokens: ref.last.metrics!.promptTokens + 10,
      // The reference run left the prompt (and its reply) in the prefix cache: all but the last prompt token are reused.
      prompt_tokens_details: { cached_tokens: ref.last.metrics!.promptTokens - 1 },
    });
    expect(ref.last.metrics!.cachedTokens).toBe(0);
    expect(ref.last.metrics!.promptTokens).toBeGreaterThan(10);
  });

  test('without include_usage there is no usage field; without logprobs, logprobs is null', async () => {
    const ref = await reference({ maxTokens: 4 });
    const chunks = await collect(await engine.chat.completions.create({ messages, ...chatSampling, max_tokens: 4, stream: true }));
    for (const c of chunks) expect('usage' in c).toBe(false);
    expect(chunks.length).toBe(ref.chunks.length + 1);
    expect(chunks.slice(0, -1).every((c) => c.choices[0].logprobs === null)).toBe(true);
    expect(chunks.at(-1)!.choices[0].finish_reason).toBe('length');
  });

  test("a stop string ends with finish_reason 'stop' and is never emitted", async () => {
    const ref = await reference({ maxTokens: 24 });
    // A stop string spanning tokens (the fixture model repeats itself, so it may match at the very start).
    const stop = ref.text.slice(2, 5);
    expect(stop.length).toBe(3);
    const cut = ref.text.indexOf(stop);
    const chunks = await collect(await engine.chat.completions.create({ messages, ...chatSampling, max_tokens: 24, stop, stream: true }));
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(ref.text.slice(0, cut));
    expect(chunks.at(-1)!.choices[0].finish_reason).toBe('stop');
  });

  test('aborting the signal throws its reason from the stream, as the official client does, and frees the pages', async () => {
    const controller = new AbortController();
    const stream = await engine.chat.completions.create({ messages, ...chatSampling, max_tokens: 150, stream: true }, { signal: controller.signal });
    const seen: ChatCompletionChunk[] = [];
    const thrown = await (async () => {
      for await (const c of stream) {
        seen.push(c);
        if (seen.length === 3) controller.abort();
      }
    })().catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(DOMException);
    expect((thrown as DOMException).name).toBe('AbortError');
    expect(seen.length).toBeGreaterThanOrEqual(3);
    expect(seen.length).toBeLessThan(10);
    expect(seen.every((c) => c.choices[0].finish_reason === null)).toBe(true);
    expect(inner.stats()).toMatchObject({ streams: 0, running: 0, availablePages: runner.kv.pages });
  });

  test('an invalid request rejects create() with a typed error', async () => {
    await expect(engine.chat.completions.create({ messages, n: 3, stream: true })).rejects.toMatchObject({ name: 'InvalidRequestError', field: 'n' });
    await expect(engine.chat.completions.create({ messages, temperature: -1 })).rejects.toBeInstanceOf(InvalidRequestError);
  });

  test('the stream round-trips through encodeSSE and decodeSSE unchanged', async () => {
    const chunks = await collect(await engine.chat.completions.create({ messages, ...chatSampling, max_tokens: 6, stream: true, stream_options: { include_usage: true } }));
    async function* replay() {
      yield* chunks;
    }
    expect(await collect(decodeSSE<ChatCompletionChunk>(encodeSSE(replay())))).toEqual(chunks);
  });
});

describe('chat.completions.create, non-streaming', () => {
  test('one chat.completion, field by field', async () => {
    const ref = await reference({ maxTokens: 7, logprobs: true });
    const res: ChatCompletion = await engine.chat.completions.create({ model: 'my-name', messages, ...chatSampling, max_completion_tokens: 7, logprobs: true });
    expect(Object.keys(res).sort()).toEqual(['choices', 'created', 'id', 'model', 'object', 'usage']);
    expect(res.id).toMatch(/^chatcmpl-/);
    expect(res.object).toBe('chat.completion');
    expect(Number.isInteger(res.created)).toBe(true);
    expect(res.model).toBe('my-name');
    expect(res.choices).toEqual([
      {
        index: 0,
        message: { role: 'assistant', content: ref.text, refusal: null },
        logprobs: {
          content: ref.chunks.flatMap((c) => c.logprobs!).map((t) => ({ token: t.text, logprob: t.logprob, bytes: utf8(t.text), top_logprobs: [] })),
          refusal: null,
        },
        finish_reason: 'length',
      },
    ]);
    const p = ref.last.metrics!.promptTokens;
    expect(res.usage).toEqual({ prompt_tokens: p, completion_tokens: 7, total_tokens: p + 7, prompt_tokens_details: { cached_tokens: p - 1 } });
  });

  test('an aborted non-streaming request rejects with the signal reason', async () => {
    const controller = new AbortController();
    const reason = new Error('user left');
    const pending = engine.chat.completions.create({ messages, ...chatSampling, max_tokens: 150 }, { signal: controller.signal });
    setTimeout(() => controller.abort(reason), 0);
    await expect(pending).rejects.toBe(reason);
    expect(inner.stats()).toMatchObject({ streams: 0, availablePages: runner.kv.pages });
  });
});

describe('generate', () => {
  test('break out of for-await cancels the request and frees its pages', async () => {
    let n = 0;
    for await (const c of engine.generate({ messages, ...sampling, maxTokens: 150 })) {
      expect(c.finishReason).toBeNull();
      if (++n === 2) break;
    }
    expect(inner.stats()).toMatchObject({ streams: 0, running: 0, waiting: 0, availablePages: runner.kv.pages });
    // The next request on the same engine runs normally.
    const again = await collect(engine.generate({ messages, ...sampling, maxTokens: 5 }));
    expect(again.at(-1)!.finishReason).toBe('length');
    expect(again.flatMap((c) => c.ids).length).toBe(5);
  });

  test("an already-aborted signal ends at once with 'abort'", async () => {
    const chunks = await collect(engine.generate({ messages, maxTokens: 5 }, { signal: AbortSignal.abort() }));
    expect(chunks.length).toBe(1);
    expect(chunks[0]).toMatchObject({ finishReason: 'abort', ids: [], text: '' });
  });

  test('the same seeded request gives the same ids', async () => {
    const a = await reference({ maxTokens: 12 });
    const b = await reference({ maxTokens: 12 });
    expect(a.ids).toEqual(b.ids);
    expect(a.ids.length).toBe(12);
  });

  test('after destroy(), calls reject with EngineClosedError', async () => {
    await engine.destroy();
    await engine.destroy(); // idempotent
    await expect(collect(engine.generate({ messages }))).rejects.toMatchObject({ name: 'EngineClosedError', reason: 'destroyed' });
  });
});

describe('fields nothing reads', () => {
  test('are ignored, as OpenAI does, and named once per set in a warning', async () => {
    expect(ignoredFields({ messages, temprature: 0, user: 'u1', max_tokens: 2 })).toEqual(['temprature', 'user']);
    expect(ignoredFields({ messages, max_tokens: 2, truncate: 'oldest' })).toEqual([]);
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      for (let i = 0; i < 2; i++) await engine.chat.completions.create({ messages, max_tokens: 2, metadata: {}, temprature: 0 } as never);
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0]![0])).toMatch(/ignored 'metadata', 'temprature'/);
    } finally {
      warn.mockRestore();
    }
  });
});

describe('request checks on every surface', () => {
  /** The refusal of a promise, or a failed expectation when it resolves. */
  async function refusal(p: Promise<unknown>): Promise<InvalidRequestError> {
    const e = await p.then(() => undefined, (err: unknown) => err);
    expect(e).toBeInstanceOf(InvalidRequestError);
    return e as InvalidRequestError;
  }

  test("generate() refuses an unknown field naming the closest known one, before any work", async () => {
    const e = await refusal(collect(engine.generate({ messages, maxToken: 5 } as GenerateRequest)));
    expect([e.field, e.message]).toEqual(['maxToken', "generate(): unknown field 'maxToken': did you mean 'maxTokens'? Rename it and try again."]);
    const far = await refusal(collect(engine.generate({ prompt: 'x', stream: true } as GenerateRequest)));
    expect(far.message).toMatch(/^generate\(\): unknown field 'stream': remove it\. generate\(\) takes prompt, promptIds, messages, /);
    expect(inner.stats().streams).toBe(0);
  });

  test('a role outside the five is refused by generate(), preload() and chat.completions.create, naming messages[i].role', async () => {
    const wizard = [{ role: 'user', content: 'hi' }, { role: 'wizard', content: 'abracadabra' }];
    for (const p of [collect(engine.generate({ messages: wizard })), engine.preload({ messages: wizard }), engine.chat.completions.create({ messages: wizard })]) {
      const e = await refusal(p);
      expect([e.field, e.message]).toEqual(['messages[1].role', expect.stringContaining("one of 'system', 'user', 'assistant', 'tool' or 'developer'")]);
    }
    // preload() takes one prompt and nothing else.
    const extra = await refusal(engine.preload({ messages: [{ role: 'system', content: 'x' }], temperature: 0 } as never));
    expect([extra.field, extra.message]).toEqual(['temperature', "preload(): unknown field 'temperature': remove it. preload() takes messages, prompt, promptIds, tools."]);
    expect(inner.stats()).toMatchObject({ streams: 0, prefixCache: { pinnedPages: 0 } });
  });

  test("'developer' is rendered as 'system', on generate() and preload() alike; a 'tool' result of a call runs", async () => {
    const as = (role: string) => [{ role, content: 'You are terse.' }, { role: 'user', content: 'Say something!' }];
    const greedy = { maxTokens: 6, temperature: 0 };
    const ids = async (role: string) => (await collect(engine.generate({ messages: as(role), ...greedy }))).flatMap((c) => c.ids);
    expect(await ids('developer')).toEqual(await ids('system'));
    // A developer preload pins exactly the tokens of the system one: the second is wholly cached.
    const dev = await engine.preload({ messages: [{ role: 'developer', content: 'You are terse.' }] });
    const sys = await engine.preload({ messages: [{ role: 'system', content: 'You are terse.' }] });
    expect(sys.tokens).toBe(dev.tokens);
    expect(sys.cachedTokens).toBe(sys.tokens);
    const call = { id: 'call_1', type: 'function' as const, function: { name: 'f', arguments: '{}' } };
    const history = [{ role: 'user', content: 'f?' }, { role: 'assistant', content: 'calling f', toolCalls: [call] }, { role: 'tool', content: '42', toolCallId: 'call_1', name: 'f' }];
    const tool = await collect(engine.generate({ messages: history, ...greedy }));
    expect(tool.at(-1)!.finishReason).toBe('length');
    expect(tool.flatMap((c) => c.ids)).toHaveLength(6);
  });

  test('over the Service Worker relay, a bad role is a 400 with param messages[0].role; an unknown field is still ignored', async () => {
    const container = new EventTarget() as unknown as ServiceWorkerContainer;
    const stop = serveOpenAI(engine, { container });
    const page = { id: 'page-1', postMessage: (data: unknown, transfer: Transferable[]) => container.dispatchEvent(new MessageEvent('message', { data, ports: transfer as MessagePort[] })) };
    const clients: RelayClients = { matchAll: async () => [page], get: async (id) => (id === page.id ? page : undefined) };
    const post = (body: unknown) => relayRequest(new Request('https://app.test/v1/chat/completions', { method: 'POST', body: JSON.stringify(body) }), clients, { pingTimeoutMs: 200 });
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const res = await post({ messages: [{ role: 'wizard', content: 'hi' }], max_tokens: 2 });
      expect(res.status).toBe(400);
      const { error } = await res.json();
      expect(error).toMatchObject({ type: 'invalid_request_error', param: 'messages[0].role' });
      expect(error.message).toContain("one of 'system', 'user', 'assistant', 'tool' or 'developer'");
      // OpenAI ignores fields it does not know; so does this surface (and names them), unlike generate().
      const ok = await post({ messages: [{ role: 'developer', content: 'be brief' }, { role: 'user', content: 'hi' }], max_tokens: 2, temprature: 0 });
      expect(ok.status).toBe(200);
      expect((await ok.json()).usage.completion_tokens).toBe(2);
    } finally {
      warn.mockRestore();
      stop();
    }
  });
});
