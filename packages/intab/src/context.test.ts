// Context limits as a chat user expects them, end to end on the CPU reference engine (the fixture model's context is
// 256 positions; its tiny ChatML tokenizer spells text about a token per character): a prompt over the context is
// refused with its counts before any work; a maxTokens past the context is clamped and the stream ends with 'length'
// exactly at the limit; strictContext refuses instead; truncate: 'oldest' drops whole old turns, keeps the system
// message and the last turn, and the last chunk says what went; over the OpenAI API the refusal is a 400
// context_length_exceeded, and truncate / strict_context map to the engine's options.
import { describe, expect, test } from 'vitest';
import { encodeChat, renderChat } from '@intab/model';
import type { ChatMessage, Chunk, GenerateRequest } from '@intab/engine/contract';
import { ContextLengthExceededError, InvalidRequestError } from '@intab/engine/errors';
import { wrapEngineApi } from './engine.ts';
import { errorResponse, serveOpenAI } from './openai-server.ts';
import { toGenerateRequest } from './openai.ts';
import { relayRequest, type RelayClients } from './service-worker.ts';
import { referenceEngine, tinyChatTokenizer } from './test-fixture.ts';

const CONTEXT = 256;
const system: ChatMessage = { role: 'system', content: 'You are terse.' };
const turn = (i: number): ChatMessage[] => [
  { role: 'user', content: `Question ${i}: ${'abc '.repeat(4)}` },
  { role: 'assistant', content: `Answer ${i}: ${'xyz '.repeat(4)}` },
];
const last: ChatMessage = { role: 'user', content: 'And the last one?' };
/** Six earlier turns: far more than the context holds. */
const chat: ChatMessage[] = [system, ...[1, 2, 3, 4, 5, 6].flatMap(turn), last];
/** Greedy, and no end-of-turn stop: replies run to their limit. */
const greedy = { temperature: 0, ignoreEos: true };

const tokenizer = tinyChatTokenizer();
const promptLength = (messages: ChatMessage[]) => encodeChat(tokenizer, renderChat(tokenizer, messages.map((m) => ({ ...m })), { addGenerationPrompt: true })).length;

function setup(pages?: number) {
  const r = referenceEngine({ pages });
  return { ...r, api: wrapEngineApi(r.engine, r.info, { name: 'tiny-llama' }) };
}

async function run(engine: ReturnType<typeof setup>['api'], request: GenerateRequest): Promise<{ ids: number[]; last: Chunk }> {
  const chunks: Chunk[] = [];
  for await (const c of engine.generate(request)) chunks.push(c);
  return { ids: chunks.flatMap((c) => c.ids), last: chunks[chunks.length - 1] };
}

describe('a prompt over the context', () => {
  test('is refused before any work, with its counts', async () => {
    const { api, runner } = setup();
    expect(promptLength(chat)).toBeGreaterThan(CONTEXT);
    const err = await run(api, { messages: chat, maxTokens: 8 }).catch((e) => e);
    expect(err).toBeInstanceOf(ContextLengthExceededError);
    expect(err).toMatchObject({ name: 'ContextLengthExceededError', reason: 'prompt', promptTokens: promptLength(chat), maxTokens: 8, limit: CONTEXT, limitedBy: 'context', truncatedMessages: 0 });
    expect(err.message).toMatch(new RegExp(`The prompt is ${promptLength(chat)} tokens, but the model's context length holds at most ${CONTEXT}`));
    expect(err.message).toMatch(/send truncate: 'oldest'/);
    expect(runner.log).toHaveLength(0);
    // Text prompts and ids too.
    await expect(run(api, { promptIds: Array(300).fill(5) })).rejects.toMatchObject({ reason: 'prompt', promptTokens: 300, limit: CONTEXT });
    expect(runner.log).toHaveLength(0);
  });
});

describe('maxTokens past the context', () => {
  test("is clamped: the stream ends with 'length' exactly at the context limit", async () => {
    const { api, runner } = setup();
    const messages = [system, last];
    const r = await run(api, { messages, maxTokens: 512, ...greedy });
    expect(r.last.finishReason).toBe('length');
    expect(r.last.metrics!.promptTokens).toBe(promptLength(messages));
    expect(r.last.metrics!.promptTokens + r.ids.length).toBe(CONTEXT);
    expect(r.last.truncated).toBeUndefined();
    expect(runner.kv.availablePageCount).toBe(runner.kv.pages);
  });

  test('strictContext: true refuses it with the counts and says what to do', async () => {
    const { api, runner } = setup();
    const messages = [system, last];
    const p = promptLength(messages);
    const err = await run(api, { messages, maxTokens: 512, strictContext: true }).catch((e) => e);
    expect(err).toBeInstanceOf(ContextLengthExceededError);
    expect(err).toMatchObject({ reason: 'max-tokens', promptTokens: p, maxTokens: 512, limit: CONTEXT, limitedBy: 'context' });
    expect(err.message).toContain(`needs ${p} prompt + 512 new tokens = ${p + 512}`);
    expect(err.message).toContain(`lower maxTokens to ${CONTEXT - p} or less`);
    expect(runner.log).toHaveLength(0);
    // Exactly what is left runs as asked.
    const r = await run(api, { messages, maxTokens: CONTEXT - p, strictContext: true, ...greedy });
    expect([r.ids.length, r.last.finishReason]).toEqual([CONTEXT - p, 'length']);
  });
});

describe("truncate: 'oldest'", () => {
  test('drops the oldest whole turns, keeps the system message and the last turn, and reports what went', async () => {
    const { api, engine } = setup();
    const maxTokens = 64; // the room kept: min(maxTokens, 256 / 4) = 64
    const r = await run(api, { messages: chat, maxTokens, truncate: 'oldest', ...greedy });
    const dropped = r.last.truncated!.messages;
    expect(dropped % 2).toBe(0); // whole turns (a question and its answer)
    expect(dropped).toBeGreaterThan(0);
    expect(dropped).toBeLessThan(12);
    const kept = [system, ...chat.slice(1 + dropped)];
    expect(kept.at(-1)).toBe(last);
    expect(r.last.truncated!.tokens).toBe(promptLength(chat) - promptLength(kept));
    expect(r.last.metrics!.promptTokens).toBe(promptLength(kept));
    // The fewest turns went: the kept chat leaves room for 64 new tokens, and one turn more would not.
    expect(promptLength(kept) + maxTokens).toBeLessThanOrEqual(CONTEXT);
    expect(promptLength([system, ...chat.slice(dropped - 1)]) + maxTokens).toBeGreaterThan(CONTEXT);
    // It is what the kept chat gives when sent as is.
    const same = await run(api, { messages: kept, maxTokens, ...greedy });
    expect(r.ids).toEqual(same.ids);
    expect(same.last.truncated).toBeUndefined();
    // The reply itself is clamped as usual: the stream may run to the limit.
    const long = await run(api, { messages: chat, maxTokens: 1000, truncate: 'oldest', ...greedy });
    expect(long.last.truncated).toEqual(r.last.truncated); // room: min(1000, 64)
    expect(long.last.metrics!.promptTokens + long.ids.length).toBe(CONTEXT);
    expect(long.last.finishReason).toBe('length');
    expect(engine.stats()).toMatchObject({ streams: 0, running: 0 });
  });

  test('a chat that fits drops nothing; strictContext keeps room for all of maxTokens; a text prompt cannot truncate', async () => {
    const { api } = setup();
    const small = [system, ...turn(1), last];
    const r = await run(api, { messages: small, maxTokens: 8, truncate: 'oldest', ...greedy });
    expect(r.last.truncated).toBeUndefined();
    expect(r.last.metrics!.promptTokens).toBe(promptLength(small));
    // With strictContext the room kept is maxTokens itself: more turns go.
    const strict = await run(api, { messages: chat, maxTokens: 150, truncate: 'oldest', strictContext: true, ...greedy });
    const kept = [system, ...chat.slice(1 + strict.last.truncated!.messages)];
    expect(promptLength(kept) + 150).toBeLessThanOrEqual(CONTEXT);
    expect(strict.ids).toHaveLength(150);
    const err = await run(api, { prompt: 'hello', truncate: 'oldest' }).catch((e) => e);
    expect(err).toBeInstanceOf(InvalidRequestError);
    expect(err.field).toBe('truncate');
  });

  test('when the system message and the last turn alone do not fit, it is ContextLengthExceededError', async () => {
    const { api, runner } = setup();
    const huge: ChatMessage = { role: 'user', content: 'q'.repeat(300) };
    const err = await run(api, { messages: [system, ...turn(1), ...turn(2), huge], truncate: 'oldest' }).catch((e) => e);
    expect(err).toBeInstanceOf(ContextLengthExceededError);
    expect(err).toMatchObject({ reason: 'prompt', truncatedMessages: 4, promptTokens: promptLength([system, huge]), limit: CONTEXT });
    expect(err.message).toMatch(/still \d+ tokens with its 4 oldest messages dropped.*shorten the system message or the last message/);
    expect(runner.log).toHaveLength(0);
  });
});

describe('over the OpenAI API', () => {
  test('truncate and strict_context map to the engine request; bad values name the field', () => {
    const messages = [{ role: 'user', content: 'hi' }];
    expect(toGenerateRequest({ messages, truncate: 'oldest', strict_context: true })).toMatchObject({ truncate: 'oldest', strictContext: true });
    expect(toGenerateRequest({ messages, truncate: null, strict_context: null })).toEqual({ messages });
    expect(() => toGenerateRequest({ messages, truncate: 'newest' as never })).toThrow(expect.objectContaining({ field: 'truncate' }));
    expect(() => toGenerateRequest({ messages, strict_context: 'yes' as never })).toThrow(expect.objectContaining({ field: 'strict_context' }));
  });

  test("a prompt over the context is a 400 'context_length_exceeded'; max_tokens past it is clamped unless strict_context", async () => {
    const { api } = setup();
    const container = new EventTarget() as unknown as ServiceWorkerContainer;
    const stop = serveOpenAI(api, { container });
    const page = { id: 'p', postMessage: (data: unknown, transfer: Transferable[]) => container.dispatchEvent(new MessageEvent('message', { data, ports: transfer as MessagePort[] })) };
    const clients: RelayClients = { matchAll: async () => [page], get: async () => page };
    const post = (body: unknown) => relayRequest(new Request('https://app.test/v1/chat/completions', { method: 'POST', body: JSON.stringify(body) }), clients, { pingTimeoutMs: 200 });
    try {
      const refused = await post({ messages: chat, max_tokens: 8 });
      expect(refused.status).toBe(400);
      const body = await refused.json();
      expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 'context_length_exceeded', param: 'messages' });
      expect(body.error.message).toContain(`The prompt is ${promptLength(chat)} tokens`);

      const strict = await post({ messages: [system, last], max_tokens: 512, strict_context: true });
      expect(strict.status).toBe(400);
      expect((await strict.json()).error).toMatchObject({ code: 'context_length_exceeded' });

      const clamped = await post({ messages: [system, last], max_tokens: 512, temperature: 0, logit_bias: { '2': -100, '97': -100 } });
      expect(clamped.status).toBe(200);
      const completion = await clamped.json();
      expect(completion.choices[0].finish_reason).toBe('length');
      expect(completion.usage.total_tokens).toBe(CONTEXT);

      const truncated = await post({ messages: chat, max_tokens: 16, truncate: 'oldest', temperature: 0 });
      expect(truncated.status).toBe(200);
      expect((await truncated.json()).usage.prompt_tokens).toBeLessThan(promptLength(chat));
    } finally {
      stop();
    }
    // The mapping itself, for a refusal that crossed the worker as plain data (its class rebuilt or not).
    const e = new ContextLengthExceededError({ promptTokens: 600, maxTokens: 16, limit: 512, limitedBy: 'context', reason: 'prompt' });
    expect(errorResponse(e)).toEqual({ status: 400, body: { error: { message: e.message, type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' } } });
    expect(errorResponse(Object.assign(new Error(e.message), { name: 'ContextLengthExceededError' })).status).toBe(400);
  });
});
