// The OpenAI HTTP core (handleOpenAI, answerCompletion) on a real in-thread engine (CPU reference runner, tiny ChatML
// tokenizer): what a transport relies on beyond the shared table of cases (@intab/testing's openai-cases.ts, run against the core
// and the Service Worker relay in openai-relay.test.ts). The body is pulled: an unread answer leaves the engine's
// sequence paused, and cancelling it unread ends the engine's request; an engine with `open` gets its head before its
// first chunk; the admit hook refuses (its reply, the engine untouched) or lets in with headers, and hears each
// request's end once with what it used; a server's abort reason is told to the client (an error event mid-stream), a
// failing engine mid-stream is an error event; vLLM's return_token_ids streams ids that spell nothing at once.
import { describe, expect, test } from 'vitest';
import { DEFAULT_MAX_TOKENS, type Engine } from '@intab/engine';
import type { Chunk, GenerateRequest } from '@intab/engine/contract';
import type { ReferenceRunner } from '@intab/engine/reference';
import { wrapEngineApi } from './engine.ts';
import { ENGINE_DEFAULT_MAX_TOKENS, answerCompletion, prepareCompletion, type CompletionEnd, type OpenAIEngine } from './openai-answer.ts';
import { openAIError, type OpenAIErrorReply } from './openai-errors.ts';
import { handleOpenAI, type OpenAIHttpResponse } from './openai-http.ts';
import { referenceEngine } from './test-fixture.ts';

const messages = [{ role: 'user', content: 'Say something!' }];
/** No end of turn (ids 2 and 97 are the fixture's EOS and <|im_end|>): the reply runs to max_tokens. */
const NO_EOS = { '2': -100, '97': -100 };

function setup() {
  const r = referenceEngine();
  const engine = wrapEngineApi(r.engine, r.info, { name: 'tiny-llama' });
  return { engine, inner: r.engine as Engine, runner: r.runner as ReferenceRunner };
}

const post = (path: string, body: unknown, signal?: AbortSignal) => ({ method: 'POST', path, body: JSON.stringify(body), ...(signal ? { signal } : {}) });

async function textOf(res: OpenAIHttpResponse): Promise<string> {
  return new Response(res.body).text();
}

/** The JSON of each `data:` event of an SSE body, and whether [DONE] ended it. */
function events(raw: string): { values: any[]; done: boolean } {
  const blocks = raw.split('\n\n').filter((b) => b !== '');
  const done = blocks.at(-1) === 'data: [DONE]';
  return { values: blocks.filter((b) => b !== 'data: [DONE]').map((b) => JSON.parse(b.slice(6))), done };
}

/** Lets every task queued so far run, a few times over: whatever was going to happen next has happened. */
async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setTimeout(resolve, 0));
}

describe('the body is pulled', () => {
  test('an answer nobody reads leaves the sequence paused; cancelled unread, the engine\'s request ends and its pages are back', async () => {
    const s = setup();
    const res = await handleOpenAI(s.engine, post('/v1/chat/completions', { messages, max_tokens: 150, temperature: 0, stream: true, logit_bias: NO_EOS }));
    expect(res.status).toBe(200);
    await expect.poll(() => s.inner.stats().paused, { timeout: 20_000 }).toBe(1);
    const steps = s.runner.log.length;
    await settle();
    expect(s.runner.log.length).toBe(steps); // not one step more while nobody reads
    expect(steps).toBeLessThan(40);
    await res.body.cancel();
    await expect.poll(() => s.inner.stats().streams, { timeout: 20_000 }).toBe(0);
    expect(s.inner.stats()).toMatchObject({ running: 0, paused: 0, availablePages: s.runner.kv.pages });
  });

  test('an engine with openStream(): the head goes once the engine accepted the request, before its first chunk is asked for', async () => {
    const s = setup();
    let nexts = 0;
    // The engine's own pull-based API (start, next, cancel), as `intab serve`'s bridge remotes it.
    const bridged: OpenAIEngine = {
      model: 'tiny-llama',
      info: s.engine.info,
      generate: (request, options) => s.engine.generate(request, options),
      async openStream(request: GenerateRequest, signal: AbortSignal) {
        const id = await s.inner.start(request, signal);
        return (async function* (): AsyncGenerator<Chunk> {
          for (let over = false; !over; ) {
            nexts++;
            const c = await s.inner.next(id);
            over = c.finishReason !== null;
            yield c;
          }
        })();
      },
    };
    const res = await handleOpenAI(bridged, post('/v1/completions', { prompt: 'Once', max_tokens: 5, temperature: 0, stream: true, logit_bias: NO_EOS }));
    expect([res.status, nexts]).toEqual([200, 0]);
    const { values, done } = events(await textOf(res));
    expect(done).toBe(true);
    expect(values.at(-1).choices[0].finish_reason).toBe('length');
    // A refusal still is an answer of its own, never a stream.
    const refused = await handleOpenAI(bridged, post('/v1/completions', { prompt: [1, 2, 500] }));
    expect([refused.status, JSON.parse(await textOf(refused)).error.param]).toEqual([400, 'prompt']);
  });
});

describe('the admit hook', () => {
  test('a refusal is its reply (with the ignored fields named); the engine never sees the request', async () => {
    const s = setup();
    const seen: number[] = [];
    const tooMany: OpenAIErrorReply = { status: 429, body: openAIError('Rate limit reached: retry in 2s.', 'requests', 'rate_limit_exceeded'), headers: { 'retry-after': '2' } };
    const res = await handleOpenAI(s.engine, post('/v1/completions', { prompt: 'Once upon a time', max_tokens: 7, bogus: 1 }), { admit: (p) => (seen.push(p.estimate), tooMany) });
    expect([res.status, res.headers]).toEqual([429, { 'x-intab-ignored-fields': 'bogus', 'retry-after': '2', 'content-type': 'application/json' }]);
    expect(JSON.parse(await textOf(res))).toEqual(tooMany.body);
    expect(seen).toEqual([Math.ceil('Once upon a time'.length / 4) + 1 + 7]); // the prompt at ~4 characters a token, and max_tokens
    expect(s.runner.log).toHaveLength(0);
    // A hook that throws is the server's failure, answered as one.
    const broken = await handleOpenAI(s.engine, post('/v1/completions', { prompt: 'x' }), { admit: () => { throw new TypeError('no limiter'); } });
    expect([broken.status, JSON.parse(await textOf(broken)).error.type]).toEqual([500, 'server_error']);
  });

  test('let in: its headers on the answer, and its end told once with the tally, whatever the outcome', async () => {
    const s = setup();
    const ends: CompletionEnd[] = [];
    const admit = () => ({ headers: { 'x-ratelimit-remaining-requests': '9' }, ended: (e: CompletionEnd) => ends.push(structuredClone({ ...e, error: e.error && (e.error as Error).name })) });

    const whole = await handleOpenAI(s.engine, post('/v1/chat/completions', { messages, max_tokens: 6, temperature: 0, logit_bias: NO_EOS }), { admit });
    expect(whole.headers['x-ratelimit-remaining-requests']).toBe('9');
    const completion = JSON.parse(await textOf(whole));
    expect(ends).toEqual([{ outcome: 'completed', ran: true, tally: { promptTokens: completion.usage.prompt_tokens, completionTokens: 6, finishReason: 'length' } }]);

    const streamed = await handleOpenAI(s.engine, post('/v1/chat/completions', { messages, max_tokens: 4, temperature: 0, stream: true, logit_bias: NO_EOS }), { admit });
    expect(ends).toHaveLength(1); // not over before its stream is read
    expect(events(await textOf(streamed)).done).toBe(true);
    expect(ends[1]).toMatchObject({ outcome: 'completed', ran: true, tally: { completionTokens: 4, finishReason: 'length' } });

    // Refused by the engine (a prompt over the context): it never ran.
    const over = await handleOpenAI(s.engine, post('/v1/chat/completions', { messages: [{ role: 'user', content: 'x'.repeat(400) }] }), { admit });
    expect(over.status).toBe(400);
    expect(ends[2]).toMatchObject({ outcome: 'failed', ran: false, error: 'ContextLengthExceededError', tally: { completionTokens: 0 } });

    // Aborted while nobody reads: told at the abort.
    const controller = new AbortController();
    const aborted = await handleOpenAI(s.engine, post('/v1/chat/completions', { messages, max_tokens: 100, stream: true, logit_bias: NO_EOS }, controller.signal), { admit });
    controller.abort();
    expect(ends[3]).toMatchObject({ outcome: 'aborted', ran: true });
    await expect(textOf(aborted)).rejects.toThrow();
    expect(ends).toHaveLength(4);
    await expect.poll(() => s.inner.stats().streams, { timeout: 20_000 }).toBe(0);
  });
});

describe('ends that are not the answer\'s', () => {
  const shutdown: OpenAIErrorReply = { status: 503, body: openAIError('The server is shutting down: retry against another instance.', 'server_error', 'server_shutting_down'), headers: { 'retry-after': '1' } };

  test('an abort whose reason is a reply tells the client: that reply before the head, an error event then [DONE] mid-stream', async () => {
    const s = setup();
    const early = new AbortController();
    early.abort(shutdown);
    const before = await handleOpenAI(s.engine, post('/v1/chat/completions', { messages, max_tokens: 5 }, early.signal));
    expect([before.status, before.headers['retry-after'], JSON.parse(await textOf(before))]).toEqual([503, '1', shutdown.body]);

    const late = new AbortController();
    const res = await handleOpenAI(s.engine, post('/v1/chat/completions', { messages, max_tokens: 100, temperature: 0, stream: true, logit_bias: NO_EOS }, late.signal));
    const reader = res.body.getReader();
    let raw = new TextDecoder().decode((await reader.read()).value);
    late.abort(shutdown);
    for (let r = await reader.read(); !r.done; r = await reader.read()) raw += new TextDecoder().decode(r.value);
    const { values, done } = events(raw);
    expect(values[0].object).toBe('chat.completion.chunk');
    expect(values.at(-1)).toEqual(shutdown.body);
    expect(done).toBe(true);
    await expect.poll(() => s.inner.stats().streams, { timeout: 20_000 }).toBe(0);
  });

  test('an engine that fails mid-stream: an error event naming it, then [DONE]', async () => {
    const s = setup();
    const res = await handleOpenAI(s.engine, post('/v1/completions', { prompt: 'Once', max_tokens: 100, temperature: 0, stream: true, logit_bias: NO_EOS }));
    const reader = res.body.getReader();
    let raw = new TextDecoder().decode((await reader.read()).value);
    await s.engine.destroy();
    for (let r = await reader.read(); !r.done; r = await reader.read()) raw += new TextDecoder().decode(r.value);
    const { values, done } = events(raw);
    expect(values[0].object).toBe('text_completion');
    expect(values.at(-1).error).toMatchObject({ type: 'service_unavailable', code: 'engine_closed' });
    expect(done).toBe(true);
    // Afterwards: a 503 before any stream.
    const after = await handleOpenAI(s.engine, post('/v1/completions', { prompt: 'Once', stream: true }));
    expect([after.status, JSON.parse(await textOf(after)).error.code]).toEqual([503, 'engine_closed']);
  });
});

describe('vLLM\'s return_token_ids', () => {
  test('ids that spell nothing (98..127 decode to nothing here) stream at once on chunks of their own; they add up to the whole answer\'s', async () => {
    const s = setup();
    const body = { messages, max_tokens: 6, temperature: 0, logit_bias: { '100': 100 }, return_token_ids: true };
    const whole = JSON.parse(await textOf(await handleOpenAI(s.engine, post('/v1/chat/completions', body))));
    expect(whole.choices[0]).toMatchObject({ message: { content: '' }, token_ids: [100, 100, 100, 100, 100, 100] });
    const { values } = events(await textOf(await handleOpenAI(s.engine, post('/v1/chat/completions', { ...body, stream: true }))));
    expect(values.flatMap((v) => v.choices[0]?.token_ids ?? [])).toEqual(whole.choices[0].token_ids);
    expect(values.slice(1, -1).map((v) => v.choices[0])).toEqual(Array(values.length - 2).fill({ index: 0, delta: {}, logprobs: null, finish_reason: null, token_ids: [100] }));
    // Not a boolean: refused, named.
    const bad = await handleOpenAI(s.engine, post('/v1/completions', { prompt: 'x', return_token_ids: 'yes' }));
    expect([bad.status, JSON.parse(await textOf(bad)).error.param]).toEqual([400, 'return_token_ids']);
  });
});

describe('routes and checks', () => {
  test('a path that is not percent-encoding, options the transport gives, a query and a trailing slash', async () => {
    const s = setup();
    const odd = await handleOpenAI(s.engine, { method: 'GET', path: '/v1/models/%E0%A4%A' });
    expect([odd.status, JSON.parse(await textOf(odd)).error.code]).toEqual([404, 'model_not_found']);
    const missing = await handleOpenAI(s.engine, { method: 'GET', path: '/health' }, { otherRoutes: ['GET /health', 'GET /v1/stats'] });
    expect(JSON.parse(await textOf(missing)).error.message).toMatch(/serves POST \/v1\/chat\/completions, POST \/v1\/completions, POST \/v1\/embeddings, POST \/v1\/rerank, GET \/v1\/models, GET \/health and GET \/v1\/stats\.$/);
    const models = await handleOpenAI(s.engine, { method: 'get', path: '/v1/models/?x=1' }, { created: 1_700_000_000 });
    expect(JSON.parse(await textOf(models)).data[0]).toEqual({ id: 'tiny-llama', object: 'model', created: 1_700_000_000, owned_by: 'intab', max_model_len: 256, tool_format: 'generic' });
    const options = await handleOpenAI(s.engine, { method: 'OPTIONS', path: '/v1/completions' });
    expect([options.status, options.headers.allow]).toEqual([405, 'POST']);
  });

  test('the estimate a rate limit charges: a default max_tokens is the engine\'s, shrunk to what the context leaves', () => {
    expect(ENGINE_DEFAULT_MAX_TOKENS).toBe(DEFAULT_MAX_TOKENS);
    const chat = prepareCompletion('chat', { messages: [{ role: 'user', content: 'abcdefgh' }] }, { contextLength: 100 });
    expect([chat.promptEstimate, chat.estimate]).toEqual([3 + 4 + 2, 100]);
    expect(prepareCompletion('chat', { messages: [{ role: 'user', content: 'abcdefgh' }] }, { contextLength: 4096 }).estimate).toBe(9 + DEFAULT_MAX_TOKENS);
    expect(prepareCompletion('completions', { prompt: [1, 2, 3], max_tokens: 5, model: 'm' })).toMatchObject({ estimate: 8, model: 'm', stream: false });
    // A transport that always streams (a WebSocket): streamed, and its own done event carries the usage.
    expect(prepareCompletion('chat', { messages, stream_options: { include_usage: true } }, { stream: true })).toMatchObject({ stream: true, includeUsage: false });
  });

  test('answerCompletion: the objects themselves, for a transport that carries objects (a WebSocket)', async () => {
    const s = setup();
    const answer = await answerCompletion(s.engine, 'completions', { prompt: 'Once', max_tokens: 3, temperature: 0, logit_bias: NO_EOS }, { stream: true });
    expect(answer.kind).toBe('stream');
    if (answer.kind !== 'stream') return;
    const objects = [];
    for await (const o of answer.objects) objects.push(o);
    expect(objects.at(-1)!.choices[0].finish_reason).toBe('length');
    expect(answer.tally).toMatchObject({ completionTokens: 3, finishReason: 'length' });
    expect(answer.tally.promptTokens).toBeGreaterThan(0);
  });
});
