// The one table of OpenAI HTTP cases: the same requests, and what every surface that serves OpenAI over HTTP must
// answer them with, whatever carries them. A surface is a `send` function (a request in, a fetch Response out): the core
// called directly (intab's openai-http.test.ts), the Service Worker endpoint through the real relay (openai-relay.test.ts
// in Node, openai-relay.gpu.test.ts with a real Service Worker in Chromium), and `intab serve` over HTTP/1.1 and HTTP/2
// (`send` = fetch against the server). Each case asserts what it must (vitest's expect) and returns its outcome with
// what differs between two runs blanked (ids, created times), so two surfaces' outcomes can be compared whole.
import { expect } from 'vitest';
import { schemaValidator } from './schema-validator.ts';

/** One HTTP request of a case. */
export interface CaseRequest {
  method: string;
  /** The path under the endpoint's origin, e.g. '/v1/models' (a surface under another prefix maps it). */
  path: string;
  body?: string;
  signal?: AbortSignal;
}

/** A surface: the request sent, its fetch Response back. */
export type Send = (request: CaseRequest) => Promise<Response>;

/** What the cases need to know of the model behind the surface. */
export interface CaseContext {
  /** The model's name, as /v1/models lists it. */
  model: string;
  contextLength: number;
  /** How the model writes tool calls (ModelInfo.toolFormat), as /v1/models names it. */
  toolFormat: string | null;
  /** A user message (and a completions prompt) the model answers. */
  prompt: string;
  /** A logit_bias that keeps a reply going to max_tokens (the model's end-of-text ids at -100). */
  noStop: Record<string, number>;
  /** A token id of the vocabulary (a completions prompt of ids is made of it). */
  tokenId: number;
  /** Resolves once the engine runs no request any more (an aborted one's pages are freed). */
  idle?: () => Promise<void>;
}

export interface OpenAICase {
  name: string;
  /**
   * The case makes the model call tools: its context must hold a chat with tools (with the generic format, some 650
   * tokens of prompt). A surface over a smaller model (stories260K's 512) runs these against another that holds them.
   */
  tools?: true;
  /** Sends the case's requests, asserts, and returns the outcome (to compare with another surface's). */
  run(send: Send, ctx: CaseContext): Promise<unknown>;
}

// ---- reading answers ----

const post = (path: string, body: unknown): CaseRequest => ({ method: 'POST', path, body: typeof body === 'string' ? body : JSON.stringify(body) });
const get = (path: string): CaseRequest => ({ method: 'GET', path });

/** The headers the table compares. */
function headersOf(res: Response): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const h of ['content-type', 'cache-control', 'allow', 'x-intab-ignored-fields']) out[h] = res.headers.get(h);
  return out;
}

/** Ids and created times blanked: what two runs of the same greedy request share. */
export function blanked(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(blanked);
  if (typeof v !== 'object' || v === null) return v;
  return Object.fromEntries(
    Object.entries(v).map(([k, x]) => {
      if (k === 'id' && typeof x === 'string' && /^(chatcmpl|cmpl)-/.test(x)) return [k, x.replace(/-.*/, '-*')];
      if (k === 'created' && typeof x === 'number') return [k, 0];
      // A call's id is fresh per reply, as OpenAI's.
      if (k === 'tool_calls' && Array.isArray(x)) return [k, x.map((c) => blanked(typeof c?.id === 'string' ? { ...c, id: '*' } : c))];
      return [k, blanked(x)];
    }),
  );
}

interface JsonAnswer {
  status: number;
  headers: Record<string, string | null>;
  body: any;
}

async function json(res: Response): Promise<JsonAnswer> {
  return { status: res.status, headers: headersOf(res), body: JSON.parse(await res.text()) };
}

/** An OpenAI error answer: its status, and `type`, `code` and `param`; the message matched against `message`. */
async function refused(res: Response, status: number, fields: { type: string; code: string | null; param: string | null }, message: RegExp): Promise<JsonAnswer> {
  const a = await json(res);
  expect(a.status).toBe(status);
  expect(a.headers['content-type']).toMatch(/^application\/json/);
  expect(Object.keys(a.body)).toEqual(['error']);
  expect(a.body.error).toEqual({ message: expect.stringMatching(message), ...fields });
  return a;
}

interface SseAnswer {
  status: number;
  headers: Record<string, string | null>;
  /** Each event's JSON. */
  events: any[];
  /** Whether `data: [DONE]` ended the body. */
  done: boolean;
}

/** An SSE answer read whole (its framing checked: `data: <json>` events, [DONE] last). */
async function sse(res: Response): Promise<SseAnswer> {
  const raw = await res.text();
  const blocks = raw.split('\n\n');
  expect(blocks.pop(), 'the body ends with a blank line').toBe('');
  for (const b of blocks) expect(b).toMatch(/^data: /);
  const done = blocks.at(-1) === 'data: [DONE]';
  if (done) blocks.pop();
  return { status: res.status, headers: headersOf(res), events: blocks.map((b) => JSON.parse(b.slice('data: '.length))), done };
}

const text = (events: any[]) => events.map((e) => e.choices[0]?.delta?.content ?? e.choices[0]?.text ?? '').join('');
const ids = (events: any[]) => events.flatMap((e) => e.choices[0]?.token_ids ?? []);

/**
 * A stream as two surfaces share it: where its events split the text depends on how fast the reader took them (the
 * engine coalesces what was not read yet into one chunk), so the text and ids are compared whole, with the events
 * that end it (finish_reason, usage) and the first one's role.
 */
function streamed(s: SseAnswer): unknown {
  const ending = s.events.filter((e) => e.choices.length === 0 || e.choices[0].finish_reason !== null);
  return blanked({ status: s.status, headers: s.headers, done: s.done, role: s.events[0]?.choices[0]?.delta?.role ?? null, text: text(s.events), ids: ids(s.events), ending });
}

// ---- the cases ----

/** A tool the cases offer: a function of one required string argument (small: the tools go into the prompt). */
export const WEATHER = {
  type: 'function',
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 12 } }, required: ['city'], additionalProperties: false } },
} as const;
const TIME = { type: 'function', function: { name: 'now', parameters: { type: 'object', properties: {}, additionalProperties: false } } } as const;
const TOOLS = [WEATHER, TIME];
const validArguments = { get_weather: schemaValidator(WEATHER.function.parameters)!, now: schemaValidator(TIME.function.parameters)! };

/** A stream's calls, joined from delta.tool_calls as a client joins them (each call's first delta checked). */
function joinedCalls(events: any[]): { id: string; type: string; function: { name: string; arguments: string } }[] {
  const calls: { id: string; type: string; function: { name: string; arguments: string } }[] = [];
  for (const e of events) {
    for (const d of e.choices[0]?.delta?.tool_calls ?? []) {
      if (d.id !== undefined) {
        expect(d, "a call's first delta").toEqual({ index: calls.length, id: expect.any(String), type: 'function', function: { name: expect.any(String), arguments: '' } });
        calls.push({ id: d.id, type: d.type, function: { name: d.function.name, arguments: '' } });
      } else {
        expect(Object.keys(d).sort()).toEqual(['function', 'index']);
        calls[d.index]!.function.arguments += d.function.arguments;
      }
    }
  }
  return calls;
}

/** Each call names an offered function and its arguments parse and validate under its schema. */
function checkCalls(calls: { type: string; function: { name: string; arguments: string } }[]): void {
  expect(calls.length).toBeGreaterThan(0);
  for (const c of calls) {
    expect(c.type).toBe('function');
    expect(Object.keys(validArguments)).toContain(c.function.name);
    const verdict = validArguments[c.function.name as keyof typeof validArguments](JSON.parse(c.function.arguments));
    expect(verdict.valid, `${c.function.name}(${c.function.arguments}): ${JSON.stringify(verdict.errors)}`).toBe(true);
  }
}

export const OPENAI_CASES: readonly OpenAICase[] = [
  {
    name: 'a body that is not JSON is a 400 invalid_json',
    async run(send) {
      const a = await refused(await send(post('/v1/chat/completions', '{"messages": [')), 400, { type: 'invalid_request_error', code: 'invalid_json', param: null }, /^The request body is not JSON \(.+\): send the request as application\/json\.$/);
      const b = await refused(await send(post('/v1/completions', '')), 400, { type: 'invalid_request_error', code: 'invalid_json', param: null }, /not JSON/);
      // JSON, but not an object: the body as a whole is refused (param null), as OpenAI answers.
      const c = await refused(await send(post('/v1/chat/completions', '[{"messages": []}]')), 400, { type: 'invalid_request_error', code: null, param: null }, /JSON object with messages/);
      return [a.status, b.status, c.body];
    },
  },
  {
    name: 'an unknown path is a 404 unknown_url that names what is served',
    async run(send) {
      const a = await refused(await send(post('/v1/nothing', {})), 404, { type: 'invalid_request_error', code: 'unknown_url', param: null }, /^POST \/v1\/nothing is not served here: this endpoint serves POST \/v1\/chat\/completions, POST \/v1\/completions, POST \/v1\/embeddings, POST \/v1\/rerank(,| and) GET \/v1\/models(\.$|, .+ and .+\.$)/);
      const b = await refused(await send(get('/v1/moderations')), 404, { type: 'invalid_request_error', code: 'unknown_url', param: null }, /^GET \/v1\/moderations is not served here/);
      return [a, b].map((x) => x.status);
    },
  },
  {
    name: 'a wrong method is a 405 method_not_allowed with an Allow header',
    async run(send) {
      const out = [];
      for (const [method, path, allow] of [['GET', '/v1/chat/completions', 'POST'], ['DELETE', '/v1/completions', 'POST'], ['GET', '/v1/embeddings', 'POST'], ['POST', '/v1/models', 'GET']] as const) {
        const res = await send(method === 'POST' ? post(path, {}) : { method, path });
        expect(res.headers.get('allow')).toBe(allow);
        out.push(await refused(res, 405, { type: 'invalid_request_error', code: 'method_not_allowed', param: null }, new RegExp(`^Method ${method} is not allowed on ${path}: use ${allow}\\.$`)));
      }
      return out;
    },
  },
  {
    name: 'GET /v1/models lists the model; /v1/models/{id} is the model, or a 404 model_not_found',
    async run(send, ctx) {
      const list = await json(await send(get('/v1/models')));
      expect(list.status).toBe(200);
      const model = { id: ctx.model, object: 'model', created: expect.any(Number), owned_by: 'intab', max_model_len: ctx.contextLength, tool_format: ctx.toolFormat };
      expect(list.body).toEqual({ object: 'list', data: [model] });
      expect(list.body.data[0].created).toBeGreaterThan(1.7e9); // a time, not a placeholder
      const one = await json(await send(get(`/v1/models/${encodeURIComponent(ctx.model)}`)));
      expect([one.status, one.body]).toEqual([200, model]);
      const none = await refused(await send(get('/v1/models/gpt-4o')), 404, { type: 'invalid_request_error', code: 'model_not_found', param: 'model' }, /'gpt-4o' does not exist/);
      return blanked([list, one, none]);
    },
  },
  {
    name: 'POST /v1/completions, not streamed: one text_completion with its usage and token_ids',
    async run(send, ctx) {
      const a = await json(await send(post('/v1/completions', { prompt: ctx.prompt, max_tokens: 12, temperature: 0, logit_bias: ctx.noStop, return_token_ids: true })));
      expect(a.status).toBe(200);
      expect(a.body).toMatchObject({ id: expect.stringMatching(/^cmpl-/), object: 'text_completion', model: ctx.model, choices: [{ index: 0, logprobs: null, finish_reason: 'length' }] });
      expect(a.body.usage).toMatchObject({ completion_tokens: 12, prompt_tokens: expect.any(Number), total_tokens: a.body.usage.prompt_tokens + 12 });
      expect(a.body.choices[0].token_ids).toHaveLength(12);
      expect(a.body.choices[0].text.length).toBeGreaterThan(0);
      return blanked(a);
    },
  },
  {
    name: 'POST /v1/completions streamed: text_completion events with the same text and ids, the usage, then [DONE]',
    async run(send, ctx) {
      const body = { prompt: ctx.prompt, max_tokens: 12, temperature: 0, logit_bias: ctx.noStop, return_token_ids: true };
      const whole = await json(await send(post('/v1/completions', body)));
      const s = await sse(await send(post('/v1/completions', { ...body, stream: true, stream_options: { include_usage: true } })));
      expect([s.status, s.headers['content-type'], s.headers['cache-control'], s.done]).toEqual([200, 'text/event-stream; charset=utf-8', 'no-cache', true]);
      for (const e of s.events) expect(e).toMatchObject({ object: 'text_completion', id: s.events[0].id, model: ctx.model });
      expect(text(s.events)).toBe(whole.body.choices[0].text);
      expect(ids(s.events)).toEqual(whole.body.choices[0].token_ids);
      const last = s.events.at(-1);
      expect(last.choices).toEqual([]);
      expect(last.usage).toMatchObject({ completion_tokens: 12, prompt_tokens: whole.body.usage.prompt_tokens });
      expect(s.events.at(-2).choices[0].finish_reason).toBe('length');
      return streamed(s);
    },
  },
  {
    name: 'chat, not streamed and streamed: the same answer; the stream starts with the role and ends with [DONE]',
    async run(send, ctx) {
      const body = { messages: [{ role: 'user', content: ctx.prompt }], max_tokens: 10, temperature: 0, logit_bias: ctx.noStop };
      const whole = await json(await send(post('/v1/chat/completions', body)));
      expect(whole.status).toBe(200);
      expect(whole.body).toMatchObject({ object: 'chat.completion', model: ctx.model, choices: [{ index: 0, message: { role: 'assistant', refusal: null }, logprobs: null, finish_reason: 'length' }], usage: { completion_tokens: 10 } });
      const s = await sse(await send(post('/v1/chat/completions', { ...body, stream: true })));
      expect([s.status, s.headers['content-type'], s.done]).toEqual([200, 'text/event-stream; charset=utf-8', true]);
      expect(s.events[0].choices[0].delta).toMatchObject({ role: 'assistant' });
      for (const e of s.events) expect(e).toMatchObject({ object: 'chat.completion.chunk', id: s.events[0].id });
      expect(text(s.events)).toBe(whole.body.choices[0].message.content);
      expect(s.events.at(-1).choices[0]).toEqual({ index: 0, delta: {}, logprobs: null, finish_reason: 'length' });
      return [blanked(whole), streamed(s)];
    },
  },
  {
    name: 'a bad role is a 400 whose param is messages[0].role',
    async run(send) {
      const a = await refused(await send(post('/v1/chat/completions', { messages: [{ role: 'wizard', content: 'hi' }], max_tokens: 2 })), 400, { type: 'invalid_request_error', code: null, param: 'messages[0].role' }, /one of 'system', 'user', 'assistant', 'tool' or 'developer'/);
      return a;
    },
  },
  {
    name: 'tools: a bad tool, tool_choice or call history is a 400 naming the field; the legacy completions refuse tools',
    async run(send, ctx) {
      const user = { role: 'user', content: ctx.prompt };
      const fields = (param: string) => ({ type: 'invalid_request_error', code: null, param });
      const chat = (body: Record<string, unknown>) => send(post('/v1/chat/completions', { messages: [user], max_tokens: 4, ...body }));
      const name = await refused(await chat({ tools: [{ type: 'function', function: { name: 'get weather' } }] }), 400, fields('tools[0].function.name'), /1 to 64 characters of a-z, A-Z, 0-9, _ and -/);
      const choice = await refused(await chat({ tools: [WEATHER], tool_choice: { type: 'function', function: { name: 'now' } } }), 400, fields('tool_choice.function.name'), /one of the tools \(get_weather\)/);
      const orphan = await refused(await chat({ messages: [user, { role: 'tool', tool_call_id: 'call_9', content: '21' }] }), 400, fields('messages[1].tool_call_id'), /earlier assistant message's tool_calls/);
      const legacy = await refused(await send(post('/v1/completions', { prompt: ctx.prompt, tools: [WEATHER] })), 400, fields('tools'), /legacy completions API has no tools; send tools to \/v1\/chat\/completions/);
      return [name, choice, orphan, legacy].map((a) => [a.status, a.body.error.param]);
    },
  },
  {
    name: "tools, 'required': calls of offered functions whose arguments validate; streamed, the same calls; finish_reason tool_calls",
    tools: true,
    async run(send, ctx) {
      // Seeded sampling: both requests get the same ids. One call (room for it in max_tokens even one character a token).
      const body = { messages: [{ role: 'user', content: ctx.prompt }], tools: TOOLS, tool_choice: 'required', parallel_tool_calls: false, max_tokens: 160, temperature: 1, seed: 5 };
      const whole = await json(await send(post('/v1/chat/completions', body)));
      expect(whole.status).toBe(200);
      const choice = whole.body.choices[0];
      expect(choice).toMatchObject({ index: 0, finish_reason: 'tool_calls', message: { role: 'assistant', content: null, refusal: null } });
      checkCalls(choice.message.tool_calls);
      expect(choice.message.tool_calls).toHaveLength(1); // parallel_tool_calls: false
      const s = await sse(await send(post('/v1/chat/completions', { ...body, stream: true })));
      expect([s.status, s.done]).toEqual([200, true]);
      expect(s.events[0].choices[0].delta).toMatchObject({ role: 'assistant' });
      expect(text(s.events)).toBe(''); // nothing of the call's syntax is content
      expect(joinedCalls(s.events).map((c) => c.function)).toEqual(choice.message.tool_calls.map((c: any) => c.function));
      expect(s.events.at(-1).choices[0]).toEqual({ index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' });
      return [blanked(whole), streamed(s)];
    },
  },
  {
    name: "tools: a named tool_choice calls that function; 'none' answers in text; a history of a call and its result is answered",
    tools: true,
    async run(send, ctx) {
      const user = { role: 'user', content: ctx.prompt };
      const named = await json(await send(post('/v1/chat/completions', { messages: [user], tools: TOOLS, tool_choice: { type: 'function', function: { name: 'get_weather' } }, parallel_tool_calls: false, max_tokens: 160, temperature: 1, seed: 9 })));
      expect([named.status, named.body.choices[0].finish_reason]).toEqual([200, 'tool_calls']);
      checkCalls(named.body.choices[0].message.tool_calls);
      expect(named.body.choices[0].message.tool_calls.map((c: any) => c.function.name)).toEqual(['get_weather']);
      const none = await json(await send(post('/v1/chat/completions', { messages: [user], tools: TOOLS, tool_choice: 'none', max_tokens: 6, temperature: 0 })));
      expect(none.status).toBe(200);
      expect(none.body.choices[0].message.tool_calls).toBeUndefined();
      expect(['stop', 'length']).toContain(none.body.choices[0].finish_reason);
      expect(typeof none.body.choices[0].message.content).toBe('string');
      const call = { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } };
      const history = [user, { role: 'assistant', content: null, tool_calls: [call] }, { role: 'tool', tool_call_id: 'call_1', content: '21 C' }];
      const answered = await json(await send(post('/v1/chat/completions', { messages: history, tools: TOOLS, tool_choice: 'none', max_tokens: 4, temperature: 0 })));
      expect(answered.status).toBe(200);
      expect(answered.body.usage.prompt_tokens).toBeGreaterThan(none.body.usage.prompt_tokens); // the call and its result were rendered
      return blanked([named, none, answered]);
    },
  },
  {
    name: 'an unknown field is ignored, as OpenAI does, and named in x-intab-ignored-fields',
    async run(send, ctx) {
      const a = await json(await send(post('/v1/chat/completions', { messages: [{ role: 'user', content: ctx.prompt }], max_tokens: 2, temperature: 0, temprature: 0, user: 'u1' })));
      expect([a.status, a.headers['x-intab-ignored-fields'], a.body.usage.completion_tokens]).toEqual([200, 'temprature, user', 2]);
      const s = await sse(await send(post('/v1/completions', { prompt: ctx.prompt, max_tokens: 2, stream: true, metadata: {} })));
      expect([s.status, s.headers['x-intab-ignored-fields'], s.done]).toEqual([200, 'metadata', true]);
      // Known fields, nothing named.
      const known = await send(post('/v1/completions', { prompt: ctx.prompt, max_tokens: 1, return_token_ids: false }));
      expect(known.headers.get('x-intab-ignored-fields')).toBeNull();
      await known.text();
      return [a.headers, streamed(s)];
    },
  },
  {
    name: 'over the context: a 400 context_length_exceeded naming messages, prompt or max_tokens',
    async run(send, ctx) {
      const fields = (param: string) => ({ type: 'invalid_request_error', code: 'context_length_exceeded', param });
      const chat = await refused(await send(post('/v1/chat/completions', { messages: [{ role: 'user', content: 'x '.repeat(ctx.contextLength) }], stream: true })), 400, fields('messages'), /prompt/);
      const ids = await refused(await send(post('/v1/completions', { prompt: Array(ctx.contextLength + 1).fill(ctx.tokenId) })), 400, fields('prompt'), /prompt/);
      const strict = await refused(await send(post('/v1/completions', { prompt: ctx.prompt, max_tokens: ctx.contextLength, strict_context: true })), 400, fields('max_tokens'), /strictContext/);
      // Without strict_context the same max_tokens is clamped to what the context leaves.
      const clamped = await json(await send(post('/v1/completions', { prompt: ctx.prompt, max_tokens: ctx.contextLength, temperature: 0, logit_bias: ctx.noStop })));
      expect([clamped.status, clamped.body.choices[0].finish_reason, clamped.body.usage.total_tokens]).toEqual([200, 'length', ctx.contextLength]);
      return [chat, ids, strict].map((a) => [a.status, a.body.error.param]);
    },
  },
  {
    name: 'a client that goes away mid-stream: the stream stops without [DONE] and the engine\'s request ends',
    async run(send, ctx) {
      const controller = new AbortController();
      const res = await send({ ...post('/v1/chat/completions', { messages: [{ role: 'user', content: ctx.prompt }], max_tokens: 200, temperature: 0, stream: true, logit_bias: ctx.noStop }), signal: controller.signal });
      expect([res.status, res.headers.get('content-type')]).toEqual([200, 'text/event-stream; charset=utf-8']);
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let raw = '';
      while (raw.split('\n\n').length < 3) {
        const r = await reader.read();
        expect(r.done, 'the stream ended before its second event').toBe(false);
        raw += decoder.decode(r.value, { stream: true });
      }
      controller.abort();
      // What is read after the abort (nothing, or an error): never the end of a complete answer.
      for (;;) {
        const r = await reader.read().catch(() => ({ done: true as const, value: undefined }));
        if (r.done) break;
        raw += decoder.decode(r.value, { stream: true });
      }
      expect(raw).not.toContain('[DONE]');
      await ctx.idle?.();
      const first = JSON.parse(raw.slice('data: '.length, raw.indexOf('\n\n')));
      expect(first).toMatchObject({ object: 'chat.completion.chunk', model: ctx.model, choices: [{ index: 0, delta: { role: 'assistant' }, finish_reason: null }] });
      return { status: res.status, role: first.choices[0].delta.role };
    },
  },
];
