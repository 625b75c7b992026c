// Tool calling through `intab serve` (--runtime node, in this process), on a random-weight model with Qwen3's real
// tokenizer and chat template (@intab/testing's GGUF writer): the official `openai` client's runTools() completes a
// loop (the model's call, the tool's result, the answer), streamed and not; 'required' calls stream as delta.tool_calls
// that join to the non-streamed message, over HTTP and the WebSocket; the remote backend (createEngine({ remote }))
// forwards tools and streams the server's calls back as Chunk.toolCalls. The random model calls only when it must:
// The shared table's cases that call tools (@intab/testing's openai-cases.ts) run here too: stories260K, which
// serve.test.ts runs the rest of the table on, has no room for a chat with tools. The random model calls only when it must:
// tool_choice 'required' on the loop's first round, 'none' once a tool result is in the chat (the client's fetch sets
// it, as an application that wants one round of tools would), and it ends its turn only when its end-of-turn token is
// favoured (a logit_bias on that round: runTools() refuses an answer cut by max_tokens, as a trained model's is not).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import type { Chunk } from '@intab/engine/contract';
import { loadTokenizer } from '@intab/model';
import { schemaValidator } from '@intab/testing/schema-validator';
import { syntheticGguf } from '@intab/testing/synthetic';
import { realTokenizerFiles } from '@intab/testing/tokenizer-corpus';
import { OPENAI_CASES, type CaseContext } from '@intab/testing/openai-cases';
import { createEngine } from 'intab';
import { startServer, type RunningServer } from './serve.ts';

/** Two small layers, Qwen3's architecture and its whole vocabulary: the template and the grammar are the real ones. */
const SHAPE = { hidden: 64, ffn: 128, layers: 2, heads: 4, kvHeads: 2, headDim: 16, vocab: 0, ropeTheta: 1_000_000, context: 4096, arch: 'qwen3' as const };

const WEATHER_PARAMS = { type: 'object', properties: { city: { type: 'string', maxLength: 24 }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } }, required: ['city', 'unit'], additionalProperties: false };
const WEATHER = { type: 'function' as const, function: { name: 'get_weather', description: 'The weather in a city.', parameters: WEATHER_PARAMS } };
const TIME = { type: 'function' as const, function: { name: 'local_time', description: 'The time in a city.', parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 24 } }, required: ['city'], additionalProperties: false } } };
const checkWeather = schemaValidator(WEATHER_PARAMS)!;
/** Whether `args` (parsed) validate under get_weather's schema (ajv). */
const validWeather = (args: unknown) => checkWeather(args).valid;

let dir: string;
let server: RunningServer;
/** Qwen3's <|im_end|>: the end of a turn. */
let endOfTurn: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'intab-serve-tools-'));
  const model = join(dir, 'qwen3-tools.gguf');
  const tokenizer = loadTokenizer(realTokenizerFiles('qwen3'));
  endOfTurn = tokenizer.encode('<|im_end|>')[0]!;
  writeFileSync(model, syntheticGguf(SHAPE, 'q8_0', 7, { tokenizer }));
  server = await startServer({ model, port: 0, runtime: 'node', maxBatch: 4, seed: 1, log: () => {} });
}, 240_000);

afterAll(async () => {
  await server?.close({ graceMs: 0 });
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

/** The official client against the server; after a tool result is in the chat, tool_choice 'none', the end of turn favoured. */
function client(): OpenAI {
  return new OpenAI({
    baseURL: `${server.url}/v1`,
    apiKey: 'unused',
    maxRetries: 0,
    fetch: async (url, init) => {
      const body = JSON.parse(String(init?.body ?? '{}'));
      if (Array.isArray(body.messages) && body.messages.some((m: { role: string }) => m.role === 'tool')) Object.assign(body, { tool_choice: 'none', logit_bias: { [endOfTurn]: 12 } });
      return fetch(url, { ...init, body: JSON.stringify(body) });
    },
  });
}

const user = (content: string) => ({ role: 'user' as const, content });

describe('intab serve with tools (Qwen3 template, random weights)', { timeout: 120_000 }, () => {
  test("the model's format is hermes, named in /v1/models", async () => {
    const models = await fetch(`${server.url}/v1/models`).then((r) => r.json());
    expect(models.data[0].tool_format).toBe('hermes');
  });

  test("runTools() of the openai client completes a loop: the call, the tool's result, the answer", async () => {
    const seen: unknown[] = [];
    const runner = client().chat.completions.runTools({
      model: server.model,
      messages: [user('What is the weather in Paris?')],
      tools: [{ type: 'function', function: { name: 'get_weather', description: WEATHER.function.description, parameters: WEATHER_PARAMS, function: (args: string) => (seen.push(JSON.parse(args)), { celsius: 21 }) } }],
      tool_choice: 'required',
      parallel_tool_calls: false,
      max_tokens: 128,
      temperature: 0.7,
      seed: 3,
    });
    const answer = await runner.finalContent();
    const messages = runner.messages;
    // user, the assistant's call, the tool's result, the answer.
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    const call = (messages[1] as { tool_calls: { id: string; function: { name: string; arguments: string } }[] }).tool_calls;
    expect(call).toHaveLength(1); // parallel_tool_calls: false
    expect(call[0]!.function.name).toBe('get_weather');
    expect(checkWeather(JSON.parse(call[0]!.function.arguments))).toMatchObject({ valid: true });
    expect(seen).toEqual([JSON.parse(call[0]!.function.arguments)]);
    expect(messages[2]).toMatchObject({ role: 'tool', tool_call_id: call[0]!.id, content: '{"celsius":21}' });
    expect(typeof answer).toBe('string');
    expect((messages[3] as { tool_calls?: unknown[] }).tool_calls ?? []).toEqual([]);
  });

  test('runTools() streamed: the same loop, the call assembled by the client from delta.tool_calls', async () => {
    const runner = client().chat.completions.runTools({
      model: server.model,
      messages: [user('Weather in Oslo and the time there?')],
      tools: [
        { type: 'function', function: { name: 'get_weather', description: 'The weather.', parameters: WEATHER_PARAMS, function: (_args: string) => 'cold' } },
        { type: 'function', function: { name: 'local_time', description: 'The time.', parameters: TIME.function.parameters, function: (_args: string) => '09:00' } },
      ],
      tool_choice: 'required',
      max_tokens: 128,
      temperature: 0.7,
      seed: 5,
      stream: true,
    });
    await runner.finalChatCompletion();
    const roles = runner.messages.map((m) => m.role);
    const calls = (runner.messages[1] as { tool_calls: { function: { name: string; arguments: string } }[] }).tool_calls;
    expect(roles).toEqual(['user', 'assistant', ...calls.map(() => 'tool'), 'assistant']);
    for (const c of calls) {
      expect(['get_weather', 'local_time']).toContain(c.function.name);
      expect(() => JSON.parse(c.function.arguments)).not.toThrow();
    }
  });

  test("'required', streamed and not: the same calls (seeded), finish_reason tool_calls, content null", async () => {
    const body = { model: server.model, messages: [user('Paris?')], tools: [WEATHER, TIME], tool_choice: 'required' as const, max_tokens: 64, temperature: 0.9, seed: 11 };
    const openai = client();
    const whole = await openai.chat.completions.create(body);
    const choice = whole.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls!.length).toBeGreaterThan(0);
    const chunks: ChatCompletionChunk[] = [];
    for await (const c of await openai.chat.completions.create({ ...body, stream: true })) chunks.push(c);
    const joined: { id: string; type: string; function: { name: string; arguments: string } }[] = [];
    let content = '';
    for (const c of chunks) {
      content += c.choices[0]?.delta.content ?? '';
      for (const d of c.choices[0]?.delta.tool_calls ?? []) {
        if (d.id) {
          // A call's first delta: index, id, type and name, with arguments ''.
          expect(d).toEqual({ index: joined.length, id: expect.any(String), type: 'function', function: { name: expect.any(String), arguments: '' } });
          joined.push({ id: d.id, type: d.type!, function: { name: d.function!.name!, arguments: '' } });
        } else joined[d.index]!.function.arguments += d.function!.arguments ?? '';
      }
    }
    expect(content).toBe('');
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('tool_calls');
    // Ids are fresh per reply; names and arguments are the seeded model's.
    expect(joined.map((c) => c.function)).toEqual(choice.message.tool_calls!.map((c) => (c as { function: unknown }).function));
  });

  test('over the WebSocket: the chunks carry delta.tool_calls, done says tool_calls', async () => {
    const ws = new WebSocket(server.wsUrl);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const frames: { type: string; data?: ChatCompletionChunk; finish_reason?: string }[] = [];
    const done = new Promise<void>((resolve) =>
      ws.on('message', (raw) => {
        const f = JSON.parse(String(raw));
        frames.push(f);
        if (f.type !== 'chunk') resolve();
      }),
    );
    ws.send(JSON.stringify({ type: 'request', id: 't1', body: { messages: [user('Weather in Rome?')], tools: [WEATHER], tool_choice: { type: 'function', function: { name: 'get_weather' } }, max_tokens: 64, seed: 2 } }));
    await done;
    ws.close();
    expect(frames.at(-1)).toMatchObject({ type: 'done', id: 't1', finish_reason: 'tool_calls' });
    const deltas = frames.flatMap((f) => f.data?.choices[0]?.delta.tool_calls ?? []);
    expect(deltas[0]).toMatchObject({ index: 0, type: 'function', function: { name: 'get_weather', arguments: '' } });
    const args = deltas.map((d) => d.function?.arguments ?? '').join('');
    expect(validWeather(JSON.parse(args)), args).toBe(true);
  });

  test('the remote backend forwards tools and streams the calls back as Chunk.toolCalls', async () => {
    const remote = await createEngine({ remote: { baseURL: `${server.url}/v1`, model: server.model } });
    try {
      expect(remote.info.toolFormat).toBe('hermes');
      const chunks: Chunk[] = [];
      for await (const c of remote.generate({ messages: [user('Weather in Lima?')], tools: [WEATHER], toolChoice: 'required', parallelToolCalls: false, maxTokens: 64, seed: 4 })) chunks.push(c);
      expect(chunks.at(-1)!.finishReason).toBe('tool_calls');
      const deltas = chunks.flatMap((c) => c.toolCalls ?? []);
      expect(deltas.filter((d) => d.id !== undefined)).toHaveLength(1); // parallel_tool_calls false: one call
      expect(deltas[0]).toMatchObject({ index: 0, type: 'function', function: { name: 'get_weather', arguments: '' } });
      const args = JSON.parse(deltas.map((d) => d.function.arguments).join(''));
      expect(validWeather(args)).toBe(true);
      // The arguments' partial-JSON events end with the whole object, as a local engine's do.
      const closed = deltas.flatMap((d) => d.json ?? []).filter((e) => e.kind === 'close' && e.path.length === 0);
      expect(closed.map((e) => e.value)).toEqual([args]);
      // A second turn with the call and its result in the history, through chat.completions.create.
      const call = { id: deltas[0]!.id!, type: 'function' as const, function: { name: 'get_weather', arguments: JSON.stringify(args) } };
      const reply = await remote.chat.completions.create({ messages: [user('Weather in Lima?'), { role: 'assistant', content: null, tool_calls: [call] }, { role: 'tool', tool_call_id: call.id, content: 'sunny' }], tools: [WEATHER], tool_choice: 'none', max_tokens: 8 });
      expect(reply.choices[0]!.message.tool_calls).toBeUndefined();
      expect(['stop', 'length']).toContain(reply.choices[0]!.finish_reason);
    } finally {
      await remote.destroy();
    }
  });
});

describe("intab's shared table of OpenAI cases that call tools (the core and the Service Worker endpoint answer them too)", { timeout: 120_000 }, () => {
  for (const c of OPENAI_CASES.filter((x) => x.tools)) {
    test(c.name, async () => {
      const ctx: CaseContext = {
        model: server.model,
        contextLength: server.info.contextLength,
        toolFormat: 'hermes',
        prompt: 'What is the weather in Paris?',
        noStop: { [endOfTurn]: -100 },
        tokenId: 300,
      };
      await c.run((r) => fetch(server.url + r.path, { method: r.method, body: r.body, signal: r.signal }), ctx);
    });
  }
});
