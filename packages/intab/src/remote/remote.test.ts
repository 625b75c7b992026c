// The remote backend against a real HTTP server written here that misbehaves on purpose: it drops the connection
// after N chunks, stalls past the idle or first-byte timeout, answers 429 with Retry-After then succeeds, sends
// malformed SSE, HTML with status 200, 5xx, a JSON document that breaks its schema. Each case gives its typed outcome,
// and the text that arrives is always a prefix of (or equal to) what the server sent: nothing duplicated, nothing lost.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';

import type { Chunk } from '@intab/engine/contract';
import { InvalidRequestError } from '@intab/engine/errors';
import { createEngine, type IntabEngine } from '../engine.ts';
import { RemoteConnectionError, RemoteFormatError, RemoteHttpError, RemoteProtocolError, RemoteStreamError, RemoteTimeoutError, RemoteUnsupportedError } from './errors.ts';
import { backoffMs, retryAfterMs } from './http.ts';

/** The words the server streams, one per chunk, with token id 100 + index. */
const WORDS = Array.from({ length: 24 }, (_, i) => `w${i} `);
const FULL = WORDS.join('');

/** One request the server saw. */
interface Seen {
  path: string;
  body: Record<string, unknown>;
  at: number;
  closedEarly: boolean;
  /** write() returned false at least once: the client stopped reading and TCP pushed back. */
  backpressured: boolean;
}

type Behaviour = (req: IncomingMessage, res: ServerResponse, seen: Seen, nth: number) => void | Promise<void>;

const seen: Seen[] = [];
let behaviour: Behaviour;
let server: Server;
let baseURL: string;

function chunkEvent(i: number, word: string, finish: string | null = null): string {
  return `data: ${JSON.stringify({ id: 'chatcmpl-t', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: i === 0 ? { role: 'assistant', content: word } : { content: word }, logprobs: null, finish_reason: finish, token_ids: word ? [100 + i] : [] }] })}\n\n`;
}

function sseHead(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
}

/** A well-behaved stream of `words`, then finish_reason, usage and [DONE]. */
async function streamWords(res: ServerResponse, words = WORDS, from = 0, gapMs = 0): Promise<void> {
  sseHead(res);
  for (let i = from; i < words.length; i++) {
    res.write(chunkEvent(i, words[i]!));
    if (gapMs) await new Promise((r) => setTimeout(r, gapMs));
  }
  res.write(chunkEvent(words.length, '', 'stop'));
  res.write(`data: ${JSON.stringify({ id: 'chatcmpl-t', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], usage: { prompt_tokens: 5, completion_tokens: words.length, total_tokens: words.length + 5 } })}\n\n`);
  res.end('data: [DONE]\n\n');
}

beforeAll(async () => {
  server = createServer(async (req, res) => {
    let raw = '';
    for await (const piece of req) raw += piece;
    const s: Seen = { path: req.url ?? '', body: raw ? JSON.parse(raw) : {}, at: Date.now(), closedEarly: false, backpressured: false };
    res.on('close', () => (s.closedEarly = !res.writableFinished));
    const write = res.write.bind(res);
    res.write = ((...args: Parameters<ServerResponse['write']>) => {
      const ok = write(...args);
      if (!ok) s.backpressured = true;
      return ok;
    }) as ServerResponse['write'];
    seen.push(s);
    if (req.url?.endsWith('.gguf')) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('no such model file');
      return;
    }
    if (req.url === '/v1/models') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: [{ id: 'm', object: 'model', owned_by: 'test', max_model_len: 2048, tool_format: 'hermes' }] }));
      return;
    }
    await behaviour(req, res, s, seen.filter((x) => x.path !== '/v1/models').length);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

beforeEach(() => {
  seen.length = 0;
  behaviour = (_req, res) => streamWords(res);
});

const fast = { connectMs: 2_000, firstByteMs: 1_500, idleMs: 400 };
const quickRetries = { baseDelayMs: 20, maxDelayMs: 50 };

async function remoteEngine(extra: Record<string, unknown> = {}): Promise<IntabEngine> {
  return createEngine({ remote: { baseURL, model: 'm', apiKey: 'sk-test', timeouts: fast, retries: quickRetries, ...extra } });
}

async function collect(it: AsyncIterable<Chunk>): Promise<Chunk[]> {
  const out: Chunk[] = [];
  for await (const c of it) out.push(c);
  return out;
}

const textOf = (chunks: Chunk[]) => chunks.map((c) => c.text).join('');
const posts = () => seen.filter((s) => s.path !== '/v1/models');

describe('a well-behaved server', () => {
  test('generate streams the text and ids; the request carries what was asked', async () => {
    const engine = await remoteEngine();
    expect(engine.info.backend.name).toBe('remote');
    expect(engine.info.remote).toEqual({ baseURL, model: 'm' });
    expect(engine.info.contextLength).toBe(2048);
    const chunks = await collect(engine.generate({ messages: [{ role: 'user', content: 'hi' }], maxTokens: 30, temperature: 0, seed: 3, stop: ['END'], logprobs: false }));
    expect(textOf(chunks)).toBe(FULL);
    expect(chunks.flatMap((c) => c.ids)).toEqual(WORDS.map((_, i) => 100 + i));
    const last = chunks.at(-1)!;
    expect(last.finishReason).toBe('stop');
    expect(last.metrics).toMatchObject({ promptTokens: 5, completionTokens: WORDS.length });
    const body = posts()[0]!.body;
    expect(posts()[0]!.path).toBe('/v1/chat/completions');
    expect(body).toMatchObject({ model: 'm', stream: true, max_tokens: 30, temperature: 0, seed: 3, stop: ['END'], messages: [{ role: 'user', content: 'hi' }] });
    await engine.destroy();
  });

  test('a prompt goes to /v1/completions; chat.completions.create works streaming and not', async () => {
    behaviour = (req, res) => {
      if (req.url === '/v1/completions') {
        sseHead(res);
        res.write(`data: ${JSON.stringify({ object: 'text_completion', choices: [{ index: 0, text: 'once', finish_reason: null }] })}\n\n`);
        res.write(`data: ${JSON.stringify({ object: 'text_completion', choices: [{ index: 0, text: ' upon', finish_reason: 'length' }] })}\n\n`);
        res.end('data: [DONE]\n\n');
        return;
      }
      return streamWords(res);
    };
    const engine = await remoteEngine();
    const chunks = await collect(engine.generate({ prompt: 'Tell me', maxTokens: 2 }));
    expect(textOf(chunks)).toBe('once upon');
    expect(chunks.at(-1)!.finishReason).toBe('length');
    expect(posts()[0]!.body).toMatchObject({ prompt: 'Tell me', max_tokens: 2 });
    const reply = await engine.chat.completions.create({ messages: [{ role: 'user', content: 'hi' }] });
    expect(reply.choices[0]!.message.content).toBe(FULL);
    expect(reply.usage).toMatchObject({ prompt_tokens: 5, completion_tokens: WORDS.length });
    let streamed = '';
    for await (const c of await engine.chat.completions.create({ messages: [{ role: 'user', content: 'hi' }], stream: true })) streamed += c.choices[0]?.delta.content ?? '';
    expect(streamed).toBe(FULL);
    await engine.destroy();
  });

  test('a server that ignores stream and answers one JSON completion, split inside a UTF-8 character, is read whole', async () => {
    const content = 'héllo → wörld ✓';
    behaviour = (_req, res) => {
      const bytes = Buffer.from(JSON.stringify({ object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 5 } }));
      res.writeHead(200, { 'content-type': 'application/json' });
      const cut = bytes.indexOf(Buffer.from('→')) + 1; // inside the arrow's three bytes
      res.write(bytes.subarray(0, cut));
      setTimeout(() => res.end(bytes.subarray(cut)), 30);
    };
    const engine = await remoteEngine();
    const chunks = await collect(engine.generate({ messages: [{ role: 'user', content: 'x' }] }));
    expect(textOf(chunks)).toBe(content);
    expect(chunks.at(-1)).toMatchObject({ finishReason: 'stop', metrics: { promptTokens: 3, completionTokens: 5 } });
    await engine.destroy();
  });

  test('logprobs are passed through and mapped', async () => {
    behaviour = (_req, res) => {
      sseHead(res);
      const lp = { content: [{ token: 'a', logprob: -0.5, bytes: [97], top_logprobs: [{ token: 'a', logprob: -0.5, bytes: [97] }, { token: 'b', logprob: -1.5, bytes: [98] }] }], refusal: null };
      res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'a' }, logprobs: lp, finish_reason: null, token_ids: [64] }] })}\n\n`);
      res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }] })}\n\n`);
      res.end('data: [DONE]\n\n');
    };
    const engine = await remoteEngine();
    const chunks = await collect(engine.generate({ messages: [{ role: 'user', content: 'x' }], logprobs: true, topLogprobs: 2 }));
    expect(posts()[0]!.body).toMatchObject({ logprobs: true, top_logprobs: 2 });
    expect(chunks.flatMap((c) => c.logprobs ?? [])).toEqual([{ id: 64, text: 'a', logprob: -0.5, top: [{ id: -1, text: 'a', logprob: -0.5 }, { id: -1, text: 'b', logprob: -1.5 }] }]);
    await engine.destroy();
  });

  test('a consumer that stops pulling stops the reads (TCP pushes back on the server); its text then arrives whole, coalesced', async () => {
    const big = Array.from({ length: 8000 }, (_, i) => `token-${i}-${'x'.repeat(40)} `);
    behaviour = (_req, res) => streamWords(res, big);
    const engine = await remoteEngine({ timeouts: { ...fast, idleMs: 10_000 } });
    const it = engine.generate({ messages: [{ role: 'user', content: 'x' }] })[Symbol.asyncIterator]();
    const first = await it.next();
    let text = first.value!.text;
    // Not pulling: the server's writes fill the socket until write() says false.
    for (let i = 0; i < 200 && !posts()[0]!.backpressured; i++) await new Promise((r) => setTimeout(r, 10));
    expect(posts()[0]!.backpressured).toBe(true);
    let pulls = 0;
    for (let r = await it.next(); !r.done; r = await it.next()) {
      text += r.value.text;
      pulls++;
    }
    expect(text).toBe(big.join(''));
    expect(pulls).toBeLessThan(big.length / 4); // tokens that arrived while unread were coalesced
    await engine.destroy();
  });
});

describe('a server that misbehaves', () => {
  test('dropping the connection after N chunks ends the stream with finishReason error and RemoteStreamError holding what came', async () => {
    behaviour = (_req, res) => {
      sseHead(res);
      for (let i = 0; i < 5; i++) res.write(chunkEvent(i, WORDS[i]!));
      setTimeout(() => res.socket?.destroy(), 50);
    };
    const engine = await remoteEngine();
    const chunks = await collect(engine.generate({ messages: [{ role: 'user', content: 'x' }] }));
    const last = chunks.at(-1)!;
    expect(last.finishReason).toBe('error');
    expect(last.error).toBeInstanceOf(RemoteStreamError);
    const err = last.error as RemoteStreamError;
    expect(err.text).toBe(WORDS.slice(0, 5).join(''));
    expect(textOf(chunks)).toBe(err.text);
    expect(err.ids).toEqual([100, 101, 102, 103, 104]);
    expect(err.status).toBe(200);
    expect(posts()).toHaveLength(1); // never retried once text was delivered
    // The OpenAI surface throws it, as the official client throws on a broken stream.
    let streamed = '';
    const stream = await engine.chat.completions.create({ messages: [{ role: 'user', content: 'x' }], stream: true });
    await expect(
      (async () => {
        for await (const c of stream) streamed += c.choices[0]?.delta.content ?? '';
      })(),
    ).rejects.toBeInstanceOf(RemoteStreamError);
    expect(streamed).toBe(WORDS.slice(0, 5).join(''));
    await engine.destroy();
  });

  test('a drop before the first token is retried, and the answer comes once', async () => {
    behaviour = (_req, res, _s, nth) => {
      if (nth === 1) {
        sseHead(res);
        setTimeout(() => res.socket?.destroy(), 30);
        return;
      }
      return streamWords(res);
    };
    const engine = await remoteEngine();
    const chunks = await collect(engine.generate({ messages: [{ role: 'user', content: 'x' }] }));
    expect(textOf(chunks)).toBe(FULL);
    expect(chunks.at(-1)!.finishReason).toBe('stop');
    expect(posts()).toHaveLength(2);
    await engine.destroy();
  });

  test('a stall past the idle timeout after tokens ends with RemoteStreamError caused by the idle RemoteTimeoutError', async () => {
    behaviour = (_req, res) => {
      sseHead(res);
      for (let i = 0; i < 3; i++) res.write(chunkEvent(i, WORDS[i]!));
      // then nothing, ever (the connection stays open)
    };
    const engine = await remoteEngine();
    const chunks = await collect(engine.generate({ messages: [{ role: 'user', content: 'x' }] }));
    const last = chunks.at(-1)!;
    expect(last.finishReason).toBe('error');
    const err = last.error as RemoteStreamError;
    expect(err).toBeInstanceOf(RemoteStreamError);
    expect(err.cause).toBeInstanceOf(RemoteTimeoutError);
    expect((err.cause as RemoteTimeoutError).phase).toBe('idle');
    expect(textOf(chunks)).toBe(WORDS.slice(0, 3).join(''));
    await new Promise((r) => setTimeout(r, 50));
    expect(posts()[0]!.closedEarly).toBe(true); // the request was aborted on the wire
    await engine.destroy();
  });

  test('a server that never sends a first token is retried, then gives a first-byte RemoteTimeoutError', async () => {
    behaviour = (_req, res) => sseHead(res);
    const engine = await remoteEngine({ timeouts: { ...fast, firstByteMs: 300 }, retries: { ...quickRetries, max: 1 } });
    const chunks = await collect(engine.generate({ messages: [{ role: 'user', content: 'x' }] }));
    const err = chunks.at(-1)!.error as RemoteStreamError;
    expect(chunks.at(-1)!.finishReason).toBe('error');
    expect(err.cause).toBeInstanceOf(RemoteTimeoutError);
    expect((err.cause as RemoteTimeoutError).phase).toBe('first-byte');
    expect(err.text).toBe('');
    expect(posts()).toHaveLength(2);
    await engine.destroy();
  });

  test('429 with Retry-After is waited for, then the request succeeds', async () => {
    behaviour = (_req, res, _s, nth) => {
      if (nth === 1) {
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' });
        res.end(JSON.stringify({ error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } }));
        return;
      }
      return streamWords(res);
    };
    const engine = await remoteEngine();
    const chunks = await collect(engine.generate({ messages: [{ role: 'user', content: 'x' }] }));
    expect(textOf(chunks)).toBe(FULL);
    const [a, b] = posts();
    expect(b!.at - a!.at).toBeGreaterThanOrEqual(950); // Retry-After: 1 was honoured (a lower bound cannot flake)
    await engine.destroy();
  });

  test('a Retry-After longer than maxRetryAfterMs, and 5xx past the retries, are RemoteHttpErrors', async () => {
    behaviour = (_req, res) => {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '3600' });
      res.end(JSON.stringify({ error: { message: 'Slow down', type: 'requests', code: 'rate_limit_exceeded' } }));
    };
    const engine = await remoteEngine();
    const err = await collect(engine.generate({ messages: [{ role: 'user', content: 'x' }] })).catch((e) => e);
    expect(err).toBeInstanceOf(RemoteHttpError);
    expect(err).toMatchObject({ status: 429, retryAfterMs: 3_600_000, code: 'remote_http_error', serverCode: 'rate_limit_exceeded', serverMessage: 'Slow down', attempts: 1 });
    behaviour = (_req, res) => {
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.end('overloaded');
    };
    seen.length = 0;
    const err2 = await engine.chat.completions.create({ messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(err2).toBeInstanceOf(RemoteHttpError);
    expect(err2).toMatchObject({ status: 503, attempts: 3, serverMessage: 'overloaded' });
    expect(posts()).toHaveLength(3);
    behaviour = (_req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } }));
    };
    seen.length = 0;
    const err3 = await engine.chat.completions.create({ messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(err3).toMatchObject({ name: 'RemoteHttpError', status: 401, attempts: 1 });
    expect(err3.message).toMatch(/apiKey/);
    expect(posts()).toHaveLength(1); // 401 is not retried
    await engine.destroy();
  });

  test('malformed SSE after tokens ends with RemoteStreamError (cause RemoteProtocolError); the good events before it are delivered', async () => {
    behaviour = (_req, res) => {
      sseHead(res);
      res.write(chunkEvent(0, WORDS[0]!) + chunkEvent(1, WORDS[1]!) + 'data: {"choices": [oops\n\n');
      res.end();
    };
    const engine = await remoteEngine();
    const chunks = await collect(engine.generate({ messages: [{ role: 'user', content: 'x' }] }));
    const err = chunks.at(-1)!.error as RemoteStreamError;
    expect(err).toBeInstanceOf(RemoteStreamError);
    expect(err.cause).toBeInstanceOf(RemoteProtocolError);
    expect(textOf(chunks)).toBe(WORDS[0]! + WORDS[1]!);
    await engine.destroy();
  });

  test('an HTML page with status 200 is a RemoteProtocolError that says so, before any text', async () => {
    behaviour = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><html><body>Welcome to the dev server</body></html>');
    };
    const engine = await remoteEngine();
    const err = await collect(engine.generate({ messages: [{ role: 'user', content: 'x' }] })).catch((e) => e);
    expect(err).toBeInstanceOf(RemoteProtocolError);
    expect(err.message).toMatch(/HTML page/);
    expect(err.message).toMatch(/baseURL/);
    expect(posts()).toHaveLength(1);
    await engine.destroy();
  });

  test('an unreachable server fails createEngine with RemoteConnectionError', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const err = await createEngine({ remote: { baseURL: `http://127.0.0.1:${port}/v1`, model: 'm', retries: { ...quickRetries, max: 1 } } }).catch((e) => e);
    expect(err).toBeInstanceOf(RemoteConnectionError);
    expect(err.attempts).toBe(2);
  });

  test('abort and break stop the request on the wire', async () => {
    behaviour = (_req, res) => streamWords(res, WORDS, 0, 40);
    const engine = await remoteEngine();
    const controller = new AbortController();
    const chunks: Chunk[] = [];
    for await (const c of engine.generate({ messages: [{ role: 'user', content: 'x' }] }, { signal: controller.signal })) {
      chunks.push(c);
      if (c.text) controller.abort();
    }
    expect(chunks.at(-1)!.finishReason).toBe('abort');
    expect(FULL.startsWith(textOf(chunks))).toBe(true);
    for await (const c of engine.generate({ messages: [{ role: 'user', content: 'x' }] })) if (c.text) break;
    await new Promise((r) => setTimeout(r, 100));
    expect(posts().map((s) => s.closedEarly)).toEqual([true, true]);
    expect((await engine.stats()).streams).toBe(0);
    await engine.destroy();
  });
});

describe('JSON formats', () => {
  const schema = { type: 'object', properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 0 } }, required: ['name', 'age'] };
  const answer = (doc: string, gapMs = 0) => (_req: IncomingMessage, res: ServerResponse) => streamWords(res, doc.match(/.{1,4}/g)!, 0, gapMs);

  test('a valid document streams partial-JSON events and ends with its value', async () => {
    behaviour = answer('{"name": "Ada", "age": 36}');
    const engine = await remoteEngine();
    const chunks = await collect(engine.generate({ messages: [{ role: 'user', content: 'x' }], responseFormat: { type: 'json_schema', schema } }));
    expect(posts()[0]!.body.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'response', schema, strict: true } });
    const last = chunks.at(-1)!;
    expect(last.finishReason).toBe('stop');
    expect(last.partial).toEqual({ name: 'Ada', age: 36 });
    const events = chunks.flatMap((c) => c.json ?? []);
    expect(events.filter((e) => e.kind === 'key').map((e) => e.path)).toEqual([['name'], ['age']]);
    expect(events.at(-1)).toMatchObject({ kind: 'close', path: [], complete: true });
    await engine.destroy();
  });

  test('a document that breaks the schema, or is not JSON, is a RemoteFormatError naming the problem', async () => {
    behaviour = answer('{"name": "Ada", "age": -1}');
    const engine = await remoteEngine();
    const chunks = await collect(engine.generate({ messages: [{ role: 'user', content: 'x' }], responseFormat: { type: 'json_schema', schema } }));
    expect(chunks.at(-1)!.finishReason).toBe('error');
    const err = chunks.at(-1)!.error as RemoteFormatError;
    expect(err).toBeInstanceOf(RemoteFormatError);
    expect(err.problems.some((p) => p.path === '/age')).toBe(true);
    expect(err.text).toBe('{"name": "Ada", "age": -1}');
    behaviour = answer('[-1]');
    const err2 = await engine.chat.completions.create({ messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_object' } }).catch((e) => e);
    expect(err2).toBeInstanceOf(RemoteFormatError); // [-1] is JSON, but json_object asks for an object
    behaviour = answer('Sure! Here is the JSON: {', 30);
    const chunks3 = await collect(engine.generate({ messages: [{ role: 'user', content: 'x' }], responseFormat: { type: 'json_object' } }));
    expect(chunks3.at(-1)!.error).toBeInstanceOf(RemoteFormatError);
    for (let i = 0; i < 100 && !posts().at(-1)!.closedEarly; i++) await new Promise((r) => setTimeout(r, 10));
    expect(posts().at(-1)!.closedEarly).toBe(true); // not JSON: the request is stopped (the server would take 180 ms more)
    await engine.destroy();
  });

  test('a document cut by max tokens ends with length and its partial value, unchecked', async () => {
    behaviour = (_req, res) => {
      sseHead(res);
      res.write(chunkEvent(0, '{"name": "A'));
      res.write(chunkEvent(1, '', 'length'));
      res.end('data: [DONE]\n\n');
    };
    const engine = await remoteEngine();
    const chunks = await collect(engine.generate({ messages: [{ role: 'user', content: 'x' }], responseFormat: { type: 'json_schema', schema } }));
    expect(chunks.at(-1)).toMatchObject({ finishReason: 'length', partial: { name: 'A' } });
    await engine.destroy();
  });
});

describe('tool calls', () => {
  const weather = { type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } };
  const event = (delta: Record<string, unknown>, finish: string | null = null, ids: number[] = []) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-t', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish, token_ids: ids }] })}\n\n`;
  /** OpenAI's way: text, then each call's first delta (id, type, name, arguments ''), its fragments, finish_reason tool_calls. */
  const openAiStyle: Behaviour = (_req, res) => {
    sseHead(res);
    res.write(event({ role: 'assistant', content: 'Checking.' }, null, [1]));
    res.write(event({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '' } }] }, null, [2]));
    res.write(event({ tool_calls: [{ index: 0, function: { arguments: '{"city": "Pa' } }] }, null, [3]));
    res.write(event({ tool_calls: [{ index: 0, function: { arguments: 'ris"}' } }] }, null, [4]));
    // vLLM's way for the second call: the whole call in one delta, its id repeated on the next.
    res.write(event({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '{"city":' } }] }, null, [5]));
    res.write(event({ tool_calls: [{ index: 1, id: 'call_b', function: { arguments: ' "Oslo"}' } }] }, null, [6]));
    res.write(event({}, 'tool_calls'));
    res.end('data: [DONE]\n\n');
  };

  test("tools go to the server as OpenAI's fields; its streamed calls come back as Chunk.toolCalls with 'tool_calls'", async () => {
    behaviour = openAiStyle;
    const engine = await remoteEngine();
    expect(engine.info.toolFormat).toBe('hermes'); // as the server's /models names it
    const call = { id: 'call_0', type: 'function' as const, function: { name: 'get_weather', arguments: '{"city":"Rome"}' } };
    const history = [
      { role: 'user', content: 'Weather in Rome, then Paris and Oslo?' },
      { role: 'assistant', content: null, toolCalls: [call] },
      { role: 'tool', content: 'sunny', toolCallId: 'call_0', name: 'get_weather' },
    ];
    const chunks = await collect(engine.generate({ messages: history, tools: [weather], toolChoice: 'required', parallelToolCalls: true }));
    expect(posts()[0]!.body).toMatchObject({
      tools: [weather],
      tool_choice: 'required',
      parallel_tool_calls: true,
      messages: [
        { role: 'user', content: 'Weather in Rome, then Paris and Oslo?' },
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', content: 'sunny', tool_call_id: 'call_0' },
      ],
    });
    expect(textOf(chunks)).toBe('Checking.');
    const deltas = chunks.flatMap((c) => c.toolCalls ?? []);
    expect(deltas.map(({ json: _json, ...d }) => d)).toEqual([
      { index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '' } },
      { index: 0, function: { arguments: '{"city": "Pa' } },
      { index: 0, function: { arguments: 'ris"}' } },
      { index: 1, id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '' } },
      { index: 1, function: { arguments: '{"city":' } },
      { index: 1, function: { arguments: ' "Oslo"}' } },
    ]);
    // The arguments' partial-JSON events, as a local engine gives them: the city's value, when it is complete.
    const events = deltas.flatMap((d) => d.json ?? []);
    expect(events.filter((e) => e.kind === 'value' && e.complete && e.path.join('.') === 'city').map((e) => (e as { value?: unknown }).value)).toEqual(['Paris', 'Oslo']);
    expect(chunks.at(-1)!.finishReason).toBe('tool_calls');
    await engine.destroy();
  });

  test('chat.completions.create over a remote engine: message.tool_calls streamed and not, a whole JSON answer too', async () => {
    behaviour = openAiStyle;
    const engine = await remoteEngine();
    const reply = await engine.chat.completions.create({ messages: [{ role: 'user', content: 'Paris and Oslo?' }], tools: [weather] });
    expect(reply.choices[0]).toMatchObject({
      finish_reason: 'tool_calls',
      message: { content: 'Checking.', tool_calls: [
        { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } },
        { id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Oslo"}' } },
      ] },
    });
    const streamed: { id?: string; arguments: string }[] = [];
    let finish: string | null = null;
    for await (const c of await engine.chat.completions.create({ messages: [{ role: 'user', content: 'Paris and Oslo?' }], tools: [weather], stream: true })) {
      for (const d of c.choices[0]?.delta.tool_calls ?? []) {
        streamed[d.index] ??= { arguments: '' };
        if (d.id) streamed[d.index]!.id = d.id;
        streamed[d.index]!.arguments += d.function.arguments;
      }
      finish = c.choices[0]?.finish_reason ?? finish;
    }
    expect([streamed, finish]).toEqual([reply.choices[0]!.message.tool_calls!.map((t) => ({ id: t.id, arguments: t.function.arguments })), 'tool_calls']);
    // A server that ignores stream: its message's calls are read whole.
    behaviour = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_z', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Lima"}' } }] }, finish_reason: 'tool_calls' }] }));
    };
    const whole = await engine.chat.completions.create({ messages: [{ role: 'user', content: 'Lima?' }], tools: [weather], tool_choice: 'required' });
    expect(whole.choices[0]).toMatchObject({ finish_reason: 'tool_calls', message: { content: null, tool_calls: [{ id: 'call_z', function: { name: 'get_weather', arguments: '{"city":"Lima"}' } }] } });
    await engine.destroy();
  });

  test('tools with a prompt, and a tool message without its call id, are refused before any request', async () => {
    const engine = await remoteEngine();
    const refused = async (p: AsyncIterable<Chunk>) => (await collect(p).then(() => undefined, (e: unknown) => e)) as InvalidRequestError;
    expect((await refused(engine.generate({ prompt: 'x', tools: [weather] }))).field).toBe('tools');
    expect((await refused(engine.generate({ messages: [{ role: 'user', content: 'x' }, { role: 'tool', content: '1' }] }))).field).toMatch(/^messages\[1\]/);
    expect(posts()).toHaveLength(0);
    await engine.destroy();
  });
});

describe('requests and options', () => {
  test('grammar and regex formats, and several prompts, are InvalidRequestErrors; preload and saveCache say why not', async () => {
    const engine = await remoteEngine();
    await expect(collect(engine.generate({ messages: [{ role: 'user', content: 'x' }], grammar: 'root ::= "a"' }))).rejects.toBeInstanceOf(InvalidRequestError);
    await expect(collect(engine.generate({ prompt: 'a', messages: [{ role: 'user', content: 'x' }] }))).rejects.toBeInstanceOf(InvalidRequestError);
    await expect(engine.preload({ prompt: 'system' })).rejects.toBeInstanceOf(RemoteUnsupportedError);
    await expect(engine.saveCache()).rejects.toBeInstanceOf(RemoteUnsupportedError);
    expect(posts()).toHaveLength(0);
    await engine.destroy();
  });

  test('an unknown field and a bad role are refused as a local engine refuses them, before any request; developer goes as system', async () => {
    const engine = await remoteEngine();
    const typo = (await collect(engine.generate({ messages: [{ role: 'user', content: 'x' }], maxToken: 5 } as never)).catch((e: unknown) => e)) as InvalidRequestError;
    expect(typo).toBeInstanceOf(InvalidRequestError);
    expect([typo.field, typo.message]).toEqual(['maxToken', "generate(): unknown field 'maxToken': did you mean 'maxTokens'? Rename it and try again."]);
    for (const p of [collect(engine.generate({ messages: [{ role: 'wizard', content: 'x' }] })), engine.chat.completions.create({ messages: [{ role: 'wizard', content: 'x' }] })]) {
      const e = await p.then(() => undefined, (err: unknown) => err);
      expect(e).toBeInstanceOf(InvalidRequestError);
      expect((e as InvalidRequestError).field).toBe('messages[0].role');
    }
    expect(posts()).toHaveLength(0);
    const call = { id: 'c1', type: 'function' as const, function: { name: 'f', arguments: '{}' } };
    await collect(engine.generate({ messages: [{ role: 'developer', content: 'be brief' }, { role: 'assistant', content: '', toolCalls: [call] }, { role: 'tool', content: '42', toolCallId: 'c1' }, { role: 'user', content: 'x' }] }));
    expect(posts()[0]!.body.messages).toEqual([{ role: 'system', content: 'be brief' }, { role: 'assistant', content: '', tool_calls: [call] }, { role: 'tool', content: '42', tool_call_id: 'c1' }, { role: 'user', content: 'x' }]);
    await engine.destroy();
  });

  test('bad remote options are InvalidArgumentErrors that say what to pass', async () => {
    await expect(createEngine({ remote: { baseURL: 'localhost:8000', model: 'm' } })).rejects.toMatchObject({ code: 'invalid_argument', caller: 'remote' });
    await expect(createEngine({ remote: { baseURL: 'localhost:8000', model: 'm' } })).rejects.toThrow(/http\(s\) URL/);
    await expect(createEngine({ remote: { baseURL, model: '' } })).rejects.toThrow(/remote.model/);
    await expect(createEngine({ remote: { baseURL, model: 'm', timeouts: { idleMs: -1 } } })).rejects.toThrow(/idleMs/);
  });

  test('with a local model too, prefer local runs remote where there is no WebGPU adapter, and says so', async () => {
    const engine = await createEngine({ model: 'https://example.invalid/model.gguf', remote: { baseURL, model: 'm' } });
    expect(engine.info.backend.name).toBe('remote');
    expect(engine.info.route).toEqual({ chosen: 'remote', reason: "prefer: 'local', but this browser has no WebGPU adapter" });
    await engine.destroy();
  });

  test('with a local model whose load fails, prefer local runs remote and says why; prefer remote with the server down tries the local load, whose error the caller gets', async () => {
    const missing = baseURL.replace(/\/v1$/, '/missing.gguf');
    const engine = await createEngine({ model: missing, backend: 'onnx-wasm', worker: false, cache: false, remote: { baseURL, model: 'm' } });
    expect(engine.info.route?.chosen).toBe('remote');
    expect(engine.info.route?.reason).toMatch(/^prefer: 'local', but the local load failed \(\w+: .*missing\.gguf/);
    await engine.destroy();
    // The server is down and the local load fails too: the local error is what the caller gets.
    const err = await createEngine({ model: missing, worker: false, cache: false, prefer: 'remote', remote: { baseURL: 'http://127.0.0.1:9/v1', model: 'm', retries: { max: 0 } } }).catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err.message).toMatch(/missing\.gguf/);
  });

  test('Retry-After readings and the backoff', () => {
    expect(retryAfterMs(new Headers({ 'retry-after': '2' }))).toBe(2000);
    expect(retryAfterMs(new Headers({ 'retry-after-ms': '150', 'retry-after': '2' }))).toBe(150);
    expect(retryAfterMs(new Headers({ 'retry-after': new Date(10_000 + 5_000).toUTCString() }), 10_000)).toBe(5000);
    expect(retryAfterMs(new Headers({ 'retry-after': 'soon' }))).toBeUndefined();
    const c = { baseDelayMs: 500, maxDelayMs: 8000 };
    expect(backoffMs(0, c, () => 1)).toBe(500);
    expect(backoffMs(3, c, () => 1)).toBe(4000);
    expect(backoffMs(10, c, () => 1)).toBe(8000);
    expect(backoffMs(2, c, () => 0.5)).toBe(1000);
  });
});
