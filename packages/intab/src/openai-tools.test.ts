// Tool calling in the OpenAI mapping, without a model: the request's tools, tool_choice, parallel_tool_calls and a
// history of calls and results become the engine's fields (a bad value a 400 naming the field), and the engine's
// Chunk.toolCalls become message.tool_calls and streamed delta.tool_calls, through the one core (answerCompletion and
// handleOpenAI) over an OpenAIEngine whose chunks are given: what the mapping makes of them is the unit under test.
import { describe, expect, test } from 'vitest';
import type { Chunk, GenerateRequest, ToolCallDelta } from '@intab/engine/contract';
import { InvalidRequestError } from '@intab/engine/errors';
import { UnsupportedSchemaError } from '@intab/grammar/errors';
import { answerCompletion, prepareCompletion, type OpenAIEngine } from './openai-answer.ts';
import { errorResponse, openAiParam } from './openai-errors.ts';
import { handleOpenAI } from './openai-http.ts';
import { toGenerateRequest, type ChatCompletion, type ChatCompletionChunk } from './openai.ts';
import { toCompletionRequest } from './openai-completions.ts';
import { openAiToolDeltas, ToolCallJoiner } from './openai-tools.ts';

const weather = { type: 'function', function: { name: 'get_weather', description: 'The weather in a city.', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } } as const;
const time = { type: 'function', function: { name: 'now', parameters: { type: 'object', properties: {} }, strict: true } } as const;
const user = { role: 'user', content: 'Weather in Paris?' } as const;

/** The InvalidRequestError of a body, or a failure when it is accepted. */
function refusal(body: Record<string, unknown>, map: (b: never) => unknown = toGenerateRequest): { field: string; param: string | null; message: string } {
  try {
    map(body as never);
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidRequestError);
    const e = err as InvalidRequestError;
    return { field: e.field, param: errorResponse(e).body.error.param, message: e.message };
  }
  throw new Error(`accepted: ${JSON.stringify(body).slice(0, 200)}`);
}

describe('the request', () => {
  test('tools, tool_choice and parallel_tool_calls become the engine\'s camelCase fields', () => {
    const r = toGenerateRequest({ messages: [user], tools: [weather, time], tool_choice: 'required', parallel_tool_calls: false } as never);
    expect(r).toEqual({
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [weather, time],
      toolChoice: 'required',
      parallelToolCalls: false,
    });
    // The body stays the caller's: the tools are copies.
    expect(r.tools![0]).not.toBe(weather);
    const named = toGenerateRequest({ messages: [user], tools: [weather], tool_choice: { type: 'function', function: { name: 'get_weather' } } } as never);
    expect(named.toolChoice).toEqual({ type: 'function', function: { name: 'get_weather' } });
    // Defaults are the engine's ('auto', parallel): nothing is sent for them.
    expect(toGenerateRequest({ messages: [user], tools: [weather], tool_choice: null, parallel_tool_calls: null } as never)).toEqual({ messages: [user], tools: [weather] });
    // No tools: 'none' and 'auto' mean the same as nothing; parallel_tool_calls is moot.
    expect(toGenerateRequest({ messages: [user], tool_choice: 'none', parallel_tool_calls: true } as never)).toEqual({ messages: [user] });
  });

  test('a history of calls and results: assistant tool_calls (content null) and tool messages with their call\'s name', () => {
    const call = { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } };
    const r = toGenerateRequest({
      messages: [
        user,
        { role: 'assistant', content: null, tool_calls: [call, { id: 'call_2', type: 'function', function: { name: 'now', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '{"celsius":21}' },
        { role: 'tool', tool_call_id: 'call_2', name: 'now', content: [{ type: 'text', text: '12:00' }] },
        { role: 'assistant', content: 'It is 21°C at noon.', tool_calls: [] },
      ],
      tools: [weather, time],
    } as never);
    expect(r.messages).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, toolCalls: [call, { id: 'call_2', type: 'function', function: { name: 'now', arguments: '{}' } }] },
      { role: 'tool', content: '{"celsius":21}', toolCallId: 'call_1', name: 'get_weather' },
      { role: 'tool', content: '12:00', toolCallId: 'call_2', name: 'now' },
      { role: 'assistant', content: 'It is 21°C at noon.' },
    ]);
    // Text beside the calls stays; a history of calls is valid without tools in the request too.
    const both = toGenerateRequest({ messages: [user, { role: 'assistant', content: 'Let me look.', tool_calls: [call] }, { role: 'tool', tool_call_id: 'call_1', content: 'sunny' }] } as never);
    expect(both.messages![1]).toEqual({ role: 'assistant', content: 'Let me look.', toolCalls: [call] });
  });

  test('bad values are refused naming the field as the body spells it', () => {
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ tools: {} }, 'tools', /non-empty array/],
      [{ tools: [] }, 'tools', /non-empty array/],
      [{ tools: Array.from({ length: 129 }, (_, i) => ({ type: 'function', function: { name: `f${i}` } })) }, 'tools', /at most 128 tools/],
      [{ tools: [weather, 'now'] }, 'tools[1]', /type: 'function'/],
      [{ tools: [{ type: 'retrieval', function: weather.function }] }, 'tools[0].type', /'function'/],
      [{ tools: [{ type: 'function' }] }, 'tools[0].function', /name/],
      [{ tools: [{ type: 'function', function: { name: 'get weather' } }] }, 'tools[0].function.name', /1 to 64 characters/],
      [{ tools: [{ type: 'function', function: { name: 'x'.repeat(65) } }] }, 'tools[0].function.name', /1 to 64 characters/],
      [{ tools: [weather, weather] }, 'tools[1].function.name', /no other tool/],
      [{ tools: [{ type: 'function', function: { name: 'f', description: 3 } }] }, 'tools[0].function.description', /a string/],
      [{ tools: [{ type: 'function', function: { name: 'f', parameters: [] } }] }, 'tools[0].function.parameters', /JSON Schema object/],
      [{ tools: [{ type: 'function', function: { name: 'f', strict: 'yes' } }] }, 'tools[0].function.strict', /true or false/],
      [{ tools: [weather], tool_choice: 'always' }, 'tool_choice', /'auto', 'none', 'required'/],
      [{ tools: [weather], tool_choice: { type: 'function', function: { name: 'now' } } }, 'tool_choice.function.name', /one of the tools \(get_weather\)/],
      [{ tools: [weather], tool_choice: { type: 'tool', function: { name: 'get_weather' } } }, 'tool_choice.type', /'function'/],
      [{ tool_choice: 'required' }, 'tool_choice', /without tools/],
      [{ tools: [weather], parallel_tool_calls: 'yes' }, 'parallel_tool_calls', /true or false/],
      [{ tools: [weather], response_format: { type: 'json_object' } }, 'response_format', /when tools are given/],
      [{ messages: [{ role: 'user', content: 'hi', tool_calls: [] }] }, 'messages[0].tool_calls', /only an assistant message/],
      [{ messages: [user, { role: 'assistant', content: null, tool_calls: {} }] }, 'messages[1].tool_calls', /an array/],
      [{ messages: [user, { role: 'assistant', content: null, tool_calls: [{ type: 'function', function: { name: 'f', arguments: '{}' } }] }] }, 'messages[1].tool_calls[0].id', /call's id/],
      [{ messages: [user, { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: { a: 1 } } }] }] }, 'messages[1].tool_calls[0].function.arguments', /JSON string/],
      [{ messages: [user, { role: 'tool', content: '21' }] }, 'messages[1].tool_call_id', /the id of the call/],
      [{ messages: [user, { role: 'tool', tool_call_id: 'call_9', content: '21' }] }, 'messages[1].tool_call_id', /an earlier assistant message's tool_calls/],
      [{ messages: [{ role: 'user', content: 'hi', tool_call_id: 'c' }] }, 'messages[0].tool_call_id', /only a 'tool' message/],
    ];
    for (const [extra, field, message] of cases) {
      const r = refusal({ messages: [user], ...extra });
      expect([r.field, r.param], JSON.stringify(extra).slice(0, 120)).toEqual([field, field]);
      expect(r.message).toMatch(message);
    }
  });

  test('a deep or self-containing parameters schema is refused before the worker clones it', () => {
    let deep: Record<string, unknown> = { type: 'object' };
    for (let i = 0; i < 5000; i++) deep = { type: 'object', properties: { a: deep } };
    expect(refusal({ messages: [user], tools: [{ type: 'function', function: { name: 'f', parameters: deep } }] }).field).toBe('tools[0].function.parameters');
    const loop: Record<string, unknown> = { type: 'object' };
    loop.properties = { self: loop };
    expect(refusal({ messages: [user], tools: [{ type: 'function', function: { name: 'f', parameters: loop } }] }).message).toMatch(/contains itself/);
  });

  test('the legacy completions API refuses tools with a 400 that says where they go', () => {
    for (const extra of [{ tools: [weather] }, { tool_choice: 'auto' }, { parallel_tool_calls: false }]) {
      const r = refusal({ prompt: 'Once', ...extra }, toCompletionRequest);
      const field = Object.keys(extra)[0];
      expect([r.field, r.param]).toEqual([field, field]);
      expect(r.message).toMatch(/legacy completions API has no tools; send tools to \/v1\/chat\/completions/);
    }
  });

  test('the estimate a rate limit charges counts the tools and the calls of the history (~4 characters a token)', () => {
    const plain = prepareCompletion('chat', { messages: [user], max_tokens: 10 }).promptEstimate;
    const tools = [weather, time];
    expect(prepareCompletion('chat', { messages: [user], tools, max_tokens: 10 }).promptEstimate).toBe(plain + Math.ceil(JSON.stringify(tools).length / 4));
    const call = { id: 'c', type: 'function', function: { name: 'now', arguments: '{}' } };
    const withCall = prepareCompletion('chat', { messages: [user, { role: 'assistant', content: null, tool_calls: [call] }], max_tokens: 10 }).promptEstimate;
    expect(withCall).toBe(plain + 4 + Math.ceil(JSON.stringify([call]).length / 4));
  });

  test("the engine's refusals name the body's fields", () => {
    expect(openAiParam('toolChoice')).toBe('tool_choice');
    expect(openAiParam('parallelToolCalls')).toBe('parallel_tool_calls');
    expect(openAiParam('tools[3].function.parameters')).toBe('tools[3].function.parameters');
    expect(openAiParam('messages[2].toolCalls[0].function.arguments')).toBe('messages[2].tool_calls[0].function.arguments');
    expect(openAiParam('messages[4].toolCallId')).toBe('messages[4].tool_call_id');
    // A schema the grammar refused came from the tools when the request has tools.
    const unsupported = new UnsupportedSchemaError([{ path: '/properties/when', keyword: 'format', reason: 'not enforced' }]);
    expect(errorResponse(unsupported, 'chat', 'tools')).toMatchObject({ status: 400, body: { error: { type: 'invalid_request_error', param: 'tools' } } });
    expect(errorResponse(unsupported).body.error.param).toBe('response_format');
  });
});

// ---- the answer ----

/** An engine whose chunks are given: what the mapping makes of them is the unit under test. */
function scripted(chunks: Chunk[], o: { refuse?: Error } = {}): OpenAIEngine & { requests: GenerateRequest[] } {
  const requests: GenerateRequest[] = [];
  return {
    model: 'scripted',
    info: { contextLength: 4096 },
    requests,
    async *generate(request) {
      requests.push(request);
      if (o.refuse) throw o.refuse;
      for (const c of chunks) yield structuredClone(c);
    },
  };
}

const metrics = { queueMs: 0, ttftMs: 1, promptTokens: 20, cachedTokens: 0, completionTokens: 9, prefillTokensPerSecond: 1, decodeTokensPerSecond: 1, pausedMs: 0 };
const first = (index: number, id: string, name: string): ToolCallDelta => ({ index, id, type: 'function', function: { name, arguments: '' } });
const args = (index: number, a: string): ToolCallDelta => ({ index, function: { arguments: a }, json: [] });

/** A reply of text, then two calls whose arguments arrive in fragments (some of them in one chunk), then 'tool_calls'. */
const TWO_CALLS: Chunk[] = [
  { text: 'Let me check.', ids: [1, 2], finishReason: null },
  { text: '', ids: [3, 4], finishReason: null, toolCalls: [first(0, 'call_a', 'get_weather'), args(0, '{"ci')] },
  { text: '', ids: [5], finishReason: null, toolCalls: [args(0, 'ty": "Pa'), args(0, 'ris"}')] },
  { text: '', ids: [6, 7], finishReason: null, toolCalls: [first(1, 'call_b', 'now'), args(1, '{}')] },
  { text: '', ids: [8, 9], finishReason: 'tool_calls', metrics },
];

/** OpenAI's streamed deltas joined as a client joins them (the openai SDK's accumulation): the message they make. */
function joined(chunks: ChatCompletionChunk[]): { content: string | null; tool_calls?: unknown[]; finish: string | null } {
  let content: string | null = null;
  const calls: { id: string; type: string; function: { name: string; arguments: string } }[] = [];
  let finish: string | null = null;
  for (const c of chunks) {
    const choice = c.choices[0];
    if (!choice) continue;
    if (typeof choice.delta.content === 'string') content = (content ?? '') + choice.delta.content;
    for (const d of choice.delta.tool_calls ?? []) {
      const call = (calls[d.index] ??= { id: '', type: '', function: { name: '', arguments: '' } });
      if (d.id) call.id = d.id;
      if (d.type) call.type = d.type;
      if (d.function.name) call.function.name = d.function.name;
      call.function.arguments += d.function.arguments;
    }
    finish = choice.finish_reason ?? finish;
  }
  // A reply of calls alone: its content is null, whatever empty deltas said.
  return { content: calls.length && content === '' ? null : content, ...(calls.length ? { tool_calls: calls } : {}), finish };
}

describe('the answer', () => {
  test('message.tool_calls with arguments as a JSON string, text before them as content, finish_reason tool_calls', async () => {
    const engine = scripted(TWO_CALLS);
    const a = await answerCompletion(engine, 'chat', { messages: [user], tools: [weather, time] });
    expect(a.kind).toBe('object');
    const c = (a as { object: ChatCompletion }).object;
    expect(c.choices).toEqual([
      {
        index: 0,
        message: {
          role: 'assistant',
          content: 'Let me check.',
          refusal: null,
          tool_calls: [
            { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } },
            { id: 'call_b', type: 'function', function: { name: 'now', arguments: '{}' } },
          ],
        },
        logprobs: null,
        finish_reason: 'tool_calls',
      },
    ]);
    expect(JSON.parse(c.choices[0].message.tool_calls![0].function.arguments)).toEqual({ city: 'Paris' });
    expect(c.usage).toMatchObject({ prompt_tokens: 20, completion_tokens: 9 });
    expect(engine.requests[0]).toMatchObject({ tools: [weather, time] });
  });

  test('a reply of calls alone has content null; one without calls has no tool_calls', async () => {
    const calls = await answerCompletion(scripted(TWO_CALLS.slice(1)), 'chat', { messages: [user], tools: [weather, time], tool_choice: 'required' });
    expect((calls as { object: ChatCompletion }).object.choices[0].message).toMatchObject({ content: null, tool_calls: [{ id: 'call_a' }, { id: 'call_b' }] });
    const plain = await answerCompletion(scripted([{ text: 'Sunny.', ids: [1], finishReason: 'stop', metrics }]), 'chat', { messages: [user], tools: [weather], tool_choice: 'none' });
    const message = (plain as { object: ChatCompletion }).object.choices[0].message;
    expect(message).toEqual({ role: 'assistant', content: 'Sunny.', refusal: null });
    expect((plain as { object: ChatCompletion }).object.choices[0].finish_reason).toBe('stop');
  });

  test("streamed as OpenAI does: a call's first delta has index, id, type, name and arguments '', then fragments", async () => {
    const a = await answerCompletion(scripted(TWO_CALLS), 'chat', { messages: [user], tools: [weather, time], stream: true });
    expect(a.kind).toBe('stream');
    const chunks: ChatCompletionChunk[] = [];
    for await (const c of (a as { objects: AsyncIterable<ChatCompletionChunk> }).objects) chunks.push(c);
    expect(chunks.map((c) => c.choices[0])).toEqual([
      { index: 0, delta: { role: 'assistant', content: 'Let me check.', refusal: null }, logprobs: null, finish_reason: null },
      { index: 0, delta: { tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '' } }, { index: 0, function: { arguments: '{"ci' } }] }, logprobs: null, finish_reason: null },
      // Fragments of one call in one engine chunk go as one; the partial-JSON events stay the engine's.
      { index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: 'ty": "Paris"}' } }] }, logprobs: null, finish_reason: null },
      { index: 0, delta: { tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'now', arguments: '' } }, { index: 1, function: { arguments: '{}' } }] }, logprobs: null, finish_reason: null },
      { index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' },
    ]);
    // Joined, the deltas are the non-streamed message.
    const whole = await answerCompletion(scripted(TWO_CALLS), 'chat', { messages: [user], tools: [weather, time] });
    const message = (whole as { object: ChatCompletion }).object.choices[0].message;
    expect(joined(chunks)).toEqual({ content: message.content, tool_calls: message.tool_calls, finish: 'tool_calls' });
  });

  test('a stream of calls alone starts with role and content null, and joins to the non-streamed message', async () => {
    const script = TWO_CALLS.slice(1);
    const a = await answerCompletion(scripted(script), 'chat', { messages: [user], tools: [weather, time], tool_choice: 'required', stream: true, stream_options: { include_usage: true } });
    const chunks: ChatCompletionChunk[] = [];
    for await (const c of (a as { objects: AsyncIterable<ChatCompletionChunk> }).objects) chunks.push(c);
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: null, refusal: null, tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '' } }, { index: 0, function: { arguments: '{"ci' } }] });
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { completion_tokens: 9 } });
    const whole = (await answerCompletion(scripted(script), 'chat', { messages: [user], tools: [weather, time], tool_choice: 'required' })) as { object: ChatCompletion };
    expect(joined(chunks)).toEqual({ content: null, tool_calls: whole.object.choices[0].message.tool_calls, finish: 'tool_calls' });
  });

  test('over HTTP (the core every surface shares): tools are read, not named ignored; SSE carries delta.tool_calls', async () => {
    const engine = scripted(TWO_CALLS);
    const body = JSON.stringify({ messages: [user], tools: [weather, time], tool_choice: 'auto', parallel_tool_calls: true, stream: true });
    const res = await handleOpenAI(engine, { method: 'POST', path: '/v1/chat/completions', body });
    expect([res.status, res.headers['x-intab-ignored-fields']]).toEqual([200, undefined]);
    const raw = await new Response(res.body).text();
    const events = raw.split('\n\n').filter((b) => b.startsWith('data: {')).map((b) => JSON.parse(b.slice(6)) as ChatCompletionChunk);
    expect(raw.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(joined(events)).toMatchObject({ content: 'Let me check.', finish: 'tool_calls', tool_calls: [{ id: 'call_a', function: { arguments: '{"city": "Paris"}' } }, { id: 'call_b' }] });
    expect(engine.requests[0]).toMatchObject({ toolChoice: 'auto', parallelToolCalls: true });
    // A schema the grammar refuses is a 400 naming tools.
    const refusing = scripted([], { refuse: new UnsupportedSchemaError([{ path: '/properties/x', keyword: 'patternProperties', reason: 'not enforced' }]) });
    const bad = await handleOpenAI(refusing, { method: 'POST', path: '/v1/chat/completions', body: JSON.stringify({ messages: [user], tools: [{ type: 'function', function: { name: 'f', strict: true, parameters: { type: 'object', patternProperties: { a: {} } } } }] }) });
    expect(bad.status).toBe(400);
    expect(JSON.parse(await new Response(bad.body).text()).error).toMatchObject({ type: 'invalid_request_error', param: 'tools' });
    // And the legacy completions refuse tools before the engine sees them.
    const legacy = await handleOpenAI(engine, { method: 'POST', path: '/v1/completions', body: JSON.stringify({ prompt: 'Once', tools: [weather] }) });
    expect(legacy.status).toBe(400);
    expect(JSON.parse(await new Response(legacy.body).text()).error).toMatchObject({ type: 'invalid_request_error', param: 'tools', code: null });
    expect(engine.requests).toHaveLength(1);
  });
});

describe('the delta helpers', () => {
  test('openAiToolDeltas keeps first deltas whole and joins the fragments that follow in one chunk', () => {
    expect(openAiToolDeltas([args(2, 'a'), args(2, 'b'), first(3, 'c3', 'f'), args(3, '{'), args(3, '}'), args(2, 'c')])).toEqual([
      { index: 2, function: { arguments: 'ab' } },
      { index: 3, id: 'c3', type: 'function', function: { name: 'f', arguments: '' } },
      { index: 3, function: { arguments: '{}' } },
      { index: 2, function: { arguments: 'c' } },
    ]);
  });

  test('ToolCallJoiner joins deltas by index, in index order', () => {
    const j = new ToolCallJoiner();
    j.add([first(1, 'b', 'g'), first(0, 'a', 'f')]);
    j.add([args(0, '{"x":'), args(1, '{}'), args(0, '1}')]);
    j.add(undefined);
    expect(j.joined).toEqual([
      { id: 'a', type: 'function', function: { name: 'f', arguments: '{"x":1}' } },
      { id: 'b', type: 'function', function: { name: 'g', arguments: '{}' } },
    ]);
  });
});
