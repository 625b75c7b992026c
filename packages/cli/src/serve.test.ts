// `intab serve` end to end, once per runtime: the same suite against a real server (startServer) with its engine in
// this Node process (--runtime node: here onnxruntime-node's CPU execution provider, Dawn's only adapter being
// llvmpipe's) and in headless Chromium (--runtime chromium: intab's WebGPU kernels on SwiftShader), each serving
// stories260K with its synthetic vocabulary and a plain chat template, driven by real clients: fetch (HTTP/1.1),
// node:http2 (h2c), a WebSocket, and the official `openai` npm client. Greedy outputs are checked against stories260K's
// golden ids and against each request run alone (4 and 8 at once: batching must not change a token); intab's shared
// table of OpenAI cases (the Service Worker endpoint runs the same) is answered alike by both runtimes; concurrency,
// backpressure, disconnects, limits and shutdown are checked through the server's own /v1/stats (engine pages, paused
// sequences, blocked writes), never by timing. The tok/s lines it prints are reports, not assertions.
// INTAB_SERVE_RUNTIME=node (or chromium) runs one runtime only.
import http from 'node:http';
import http2 from 'node:http2';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { openGguf, pathSource } from '@intab/model';
import { OPENAI_CASES, type CaseContext } from '@intab/testing/openai-cases';

/**
 * The shared table's cases this model runs: stories260K's 512-token context cannot hold a chat with tools (the generic
 * format writes them into the prompt), so the cases that call tools run in serve-tools.test.ts on a Qwen3 model.
 */
const CASES = OPENAI_CASES.filter((c) => !c.tools);
import { startServer, type RunningServer, type ServeRuntime, type ServerStats } from './serve.ts';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const SHARED = resolve(process.env.INTAB_SHARED ?? join(ROOT, '..', 'shared'));
const MODEL_DIR = join(SHARED, 'models', 'stories260K');
const MODEL = join(MODEL_DIR, 'stories260K-vocab-ud.gguf');
const golden = JSON.parse(readFileSync(join(MODEL_DIR, 'golden.json'), 'utf8')).cases as { prompt: number[]; greedy: number[] }[];
const KEY = 'sk-test-main';
const TEMPLATE = "{% for m in messages %}{{ m['role'] + ': ' + m['content'] + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ 'assistant:' }}{% endif %}";
const auth = (key = KEY) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
const RUNTIMES = (['node', 'chromium'] as const).filter((r) => !process.env.INTAB_SERVE_RUNTIME || process.env.INTAB_SERVE_RUNTIME === r);

let server: RunningServer;
/** Each runtime's outcomes of the shared table, by case: the two runtimes must answer alike. */
const outcomes = new Map<string, Map<ServeRuntime, unknown>>();

// ---- clients ----

interface Streamed {
  status: number;
  events: Record<string, any>[];
  comments: number;
  done: boolean;
  ids: number[];
  text: string;
  usage?: Record<string, number>;
}

/** The data events, comments and [DONE] of an SSE body. */
function parseSse(raw: string, status = 200): Streamed {
  const events: Record<string, any>[] = [];
  let comments = 0;
  let done = false;
  for (const line of raw.split('\n')) {
    if (line.startsWith(':')) comments++;
    else if (line === 'data: [DONE]') done = true;
    else if (line.startsWith('data: ')) events.push(JSON.parse(line.slice(6)));
  }
  const choices = events.map((e) => e.choices?.[0]).filter(Boolean);
  return {
    status,
    events,
    comments,
    done,
    ids: choices.flatMap((c) => c.token_ids ?? []),
    text: choices.map((c) => c.text ?? c.delta?.content ?? '').join(''),
    usage: events.find((e) => e.usage)?.usage,
  };
}

/** A streamed request over HTTP/1.1 (fetch), with the arrival time of every token (for the tok/s reports). */
async function sse(path: string, body: Record<string, unknown>, key = KEY): Promise<Streamed & { tokS: number | null }> {
  const r = await fetch(server.url + path, { method: 'POST', headers: auth(key), body: JSON.stringify({ ...body, stream: true }) });
  if (!r.ok || !r.body) return { ...parseSse('', r.status), events: [await r.json()], tokS: null };
  let raw = '';
  const arrivals: { at: number; n: number }[] = [];
  const decoder = new TextDecoder();
  for await (const part of r.body) {
    const text = decoder.decode(part, { stream: true });
    raw += text;
    const n = (text.match(/"token_ids":\[(\d+(,\d+)*)\]/g) ?? []).reduce((s, m) => s + m.split(',').length, 0);
    if (n) arrivals.push({ at: performance.now(), n });
  }
  const total = arrivals.reduce((s, a) => s + a.n, 0);
  const span = arrivals.length > 1 ? arrivals.at(-1)!.at - arrivals[0].at : 0;
  return { ...parseSse(raw, r.status), tokS: span > 0 ? Math.round(((total - arrivals[0].n) / span) * 1000) : null };
}

async function post(path: string, body: unknown, key = KEY): Promise<{ status: number; headers: Headers; json: any }> {
  const r = await fetch(server.url + path, { method: 'POST', headers: auth(key), body: JSON.stringify(body) });
  return { status: r.status, headers: r.headers, json: await r.json() };
}

async function stats(): Promise<ServerStats> {
  const r = await fetch(`${server.url}/v1/stats`, { headers: auth() });
  return r.json();
}

/** Polls `check` (every 50 ms) until it holds; fails with `what` after 20 s. */
async function waitFor(what: string, check: (s: ServerStats) => boolean): Promise<ServerStats> {
  const until = Date.now() + 20_000;
  for (;;) {
    const s = await stats();
    if (check(s)) return s;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(s)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const idle = (s: ServerStats) => s.requests.length === 0 && s.engine!.streams === 0 && s.engine!.availablePages === s.engine!.totalPages;

/**
 * A POST on an HTTP/2 session whose body is not read until resume(): with a small window the server's writes back up.
 * Logprobs (20 alternatives a token) make every event ~2 KB, so that happens within a few tokens.
 */
function stuckStream(session: http2.ClientHttp2Session, body: Record<string, unknown>) {
  const stream = session.request({ ':method': 'POST', ':path': '/v1/completions', ...auth() });
  stream.end(JSON.stringify({ ...body, stream: true, logprobs: 20 }));
  const status = new Promise<number>((r) => stream.once('response', (h) => r(Number(h[':status']))));
  return {
    stream,
    status,
    /** Reads the rest of the body (resolves at its end, or when the stream is reset). */
    resume(): Promise<string> {
      return new Promise((resolve) => {
        let raw = '';
        stream.setEncoding('utf8');
        if (stream.destroyed) {
          for (let part = stream.read(); part !== null; part = stream.read()) raw += part;
          return resolve(raw);
        }
        stream.on('data', (d: string) => (raw += d));
        stream.on('end', () => resolve(raw));
        stream.on('error', () => resolve(raw));
        stream.on('close', () => resolve(raw));
      });
    },
  };
}

/** Eight different prompts: the two golden ones and six seeded ones. */
const PROMPTS = [golden[0].prompt, golden[1].prompt, ...Array.from({ length: 6 }, (_, i) => [1, ...Array.from({ length: 2 + i }, (_, j) => 259 + ((i * 97 + j * 31) % 253))])];

// ---- tests ----

for (const runtime of RUNTIMES) describe(`intab serve --runtime ${runtime} (HTTP/1.1, h2c, WebSocket; stories260K)`, { timeout: 60_000 }, () => {
  beforeAll(async () => {
    server = await startServer({
      model: MODEL,
      port: 0,
      runtime,
      chatTemplate: TEMPLATE,
      maxBatch: 8,
      maxQueue: 4,
      apiKeys: [KEY, { key: 'sk-rpm', rateLimit: { rpm: 2 } }, { key: 'sk-tpm', rateLimit: { tpm: 100 } }],
      log: () => {},
    });
  }, 180_000);

  afterAll(async () => {
    if (server?.runtime === runtime) await server.close({ graceMs: 0 });
  }, 60_000);

  test('the engine runs where the runtime says, on the backend it says, and says why', async () => {
    expect(server.runtime).toBe(runtime);
    const s = await stats();
    expect([s.runtime, s.backend]).toEqual([runtime, server.info.backend.name]);
    if (runtime === 'node') {
      // No hardware adapter here (Dawn's only one is a GL compatibility adapter over llvmpipe): the browser's `auto`
      // rule puts the model on onnxruntime-node's CPU execution provider, and says why.
      expect(server.info.backend.name).toBe('onnx-wasm');
      expect(server.info.backend.reason).toMatch(/^auto: (the only WebGPU adapter is a software one \(.*llvmpipe.*\)|WebGPU is unavailable here \(.*Dawn.*\)).*onnxruntime-node [\d.]+'s cpu execution provider/);
      expect(server.info.adapter).toMatch(/^onnxruntime-node [\d.]+ CPU EP \(\d+ threads?\); graph written from the weights$/);
    } else {
      expect(server.info.backend).toEqual({ name: 'webgpu', reason: "backend 'webgpu' was asked for" });
    }
    expect(server.readyMs).toBeGreaterThan(0);
  });

  test('GET /health, /v1/models; API keys (401 without one, or with a wrong one)', async () => {
    expect(await (await fetch(`${server.url}/health`)).json()).toEqual({ status: 'ok', model: server.model, runtime });
    const models = await (await fetch(`${server.url}/v1/models`, { headers: auth() })).json();
    expect(models).toMatchObject({ object: 'list', data: [{ id: 'stories260K-vocab-ud', object: 'model', owned_by: 'intab' }] });
    const none = await fetch(`${server.url}/v1/models`);
    expect(none.status).toBe(401);
    expect((await none.json()).error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_api_key' });
    const wrong = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }] }, 'sk-wrong');
    expect(wrong.status).toBe(401);
    const bad = await post('/v1/chat/completions', { messages: [] });
    expect([bad.status, bad.json.error.type, bad.json.error.param]).toEqual([400, 'invalid_request_error', 'messages']);
    expect((await post('/v1/nothing', {})).status).toBe(404);
  });

  test('4 and 8 concurrent streaming clients: each gets exactly what it gets alone (greedy), the golden ids where known', async () => {
    const body = (prompt: number[]) => ({ prompt, max_tokens: 40, temperature: 0, return_token_ids: true, stream_options: { include_usage: true } });
    const solo: Streamed[] = [];
    for (const p of PROMPTS) solo.push(await sse('/v1/completions', body(p)));
    for (const [i, g] of golden.entries()) expect(solo[i].ids).toEqual(g.greedy.slice(0, 40));
    for (const n of [4, 8]) {
      // Prompts of different lengths: their decode steps are batched with different amounts of padding.
      const together = await Promise.all(PROMPTS.slice(0, n).map((p) => sse('/v1/completions', body(p))));
      together.forEach((t, i) => {
        expect(t.status).toBe(200);
        expect(t.done).toBe(true);
        expect(t.ids, `stream ${i} of ${n}`).toEqual(solo[i].ids);
        expect(t.text).toBe(solo[i].text);
        expect(t.usage!.completion_tokens).toBe(t.ids.length); // nothing lost between the engine and the client
      });
      console.log(JSON.stringify({ test: `serve ${n} concurrent`, runtime, per_stream_tok_s: together.map((t) => t.tokS) }));
    }
    await waitFor('the streams to end and their pages to be free', idle);
  });

  describe("intab's shared table of OpenAI cases (the Service Worker endpoint answers the same)", () => {
    let ctx: CaseContext;
    beforeAll(async () => {
      const eos = (await openGguf([await pathSource(MODEL)])).config.eosIds;
      ctx = {
        model: server.model,
        contextLength: server.info.contextLength,
        // Its chat template knows no tools: the generic format (intab writes them into the system message).
        toolFormat: 'generic',
        prompt: 'Once upon a time',
        noStop: Object.fromEntries(eos.map((id) => [String(id), -100])),
        tokenId: 300,
        idle: async () => void (await waitFor('the engine to be idle', idle)),
      };
    });
    for (const c of CASES) {
      test(c.name, async () => {
        const outcome = await c.run((r) => fetch(server.url + r.path, { method: r.method, body: r.body, signal: r.signal, headers: auth() }), ctx);
        if (!outcomes.has(c.name)) outcomes.set(c.name, new Map());
        outcomes.get(c.name)!.set(runtime, outcome);
      });
    }
  });

  test('a slow reader is paused in the engine and does not slow the others; its tokens arrive coalesced, none lost', async () => {
    const slowBody = { prompt: [1, 300, 301, 302], max_tokens: 200, temperature: 0, return_token_ids: true };
    const alone = await post('/v1/completions', slowBody);
    expect(alone.status).toBe(200);
    // Its own HTTP/2 connection with a 1 KiB stream window: reading nothing, it stops the server's writes at once.
    const session = http2.connect(server.url, { settings: { initialWindowSize: 1024 } });
    try {
      const slow = stuckStream(session, slowBody);
      expect(await slow.status).toBe(200);
      const stuck = await waitFor('the slow stream to be blocked and paused', (s) => s.requests.some((r) => r.transport === 'h2' && r.blocked) && s.engine!.paused >= 1);
      const slowTokens = stuck.requests.find((r) => r.transport === 'h2')!.completion_tokens;
      // The others, meanwhile, run to their end.
      const others = await Promise.all(PROMPTS.slice(1).map((p) => sse('/v1/completions', { prompt: p, max_tokens: 40, temperature: 0, return_token_ids: true })));
      const after = await stats();
      const still = after.requests.find((r) => r.transport === 'h2')!;
      console.log(JSON.stringify({ test: 'serve slow reader', slow_tokens_while_blocked: still.completion_tokens, slow_blocked_ms: still.blocked_ms, others_tok_s: others.map((o) => o.tokS) }));
      for (const o of others) expect([o.done, o.ids.length]).toEqual([true, 40]);
      // The slow one is still there, blocked, paused in the engine, hardly further than before.
      expect(still.blocked).toBe(true);
      expect(after.engine!.paused).toBeGreaterThanOrEqual(1);
      expect(still.completion_tokens).toBeLessThan(200);
      // Hardly pulled from the engine since (what the client's own buffers may still have taken), whatever the others did.
      expect(still.completion_tokens - slowTokens).toBeLessThanOrEqual(16);
      // Reading again, it gets everything: the same ids as alone, several tokens per event where they queued.
      const rest = parseSse(await slow.resume());
      expect(rest.done).toBe(true);
      expect(rest.ids).toEqual(alone.json.choices[0].token_ids);
      expect(rest.ids.length).toBe(alone.json.usage.completion_tokens);
      expect(Math.max(...rest.events.map((e) => e.choices?.[0]?.token_ids?.length ?? 0))).toBeGreaterThan(1);
    } finally {
      session.destroy();
    }
    await waitFor('the slow stream to end', idle);
  });

  test('a client that disconnects mid-stream aborts its request and frees its pages', async () => {
    const before = await stats();
    await new Promise<void>((resolve, reject) => {
      const req = http.request(`${server.url}/v1/completions`, { method: 'POST', headers: auth() }, (res) => {
        res.once('data', async () => {
          const running = await stats();
          // running: it holds pages
          expect(running.requests).toHaveLength(1);
          expect(running.engine!.availablePages).toBeLessThan(running.engine!.totalPages);
          req.destroy();
          resolve();
        });
      });
      req.on('error', () => {});
      req.on('close', () => resolve());
      req.end(JSON.stringify({ prompt: [1, 403], max_tokens: 400, temperature: 0, stream: true }));
      setTimeout(() => reject(new Error('no data')), 60_000).unref();
    });
    const after = await waitFor('the aborted request to free its pages', idle);
    expect(after.totals.aborted).toBe(before.totals.aborted + 1);
  });

  test('rate limits per key: 429 with Retry-After and OpenAI-shaped bodies, for requests and for tokens per minute', async () => {
    const small = { prompt: [1, 403], max_tokens: 2, temperature: 0 };
    expect((await post('/v1/completions', small, 'sk-rpm')).status).toBe(200);
    const second = await post('/v1/completions', small, 'sk-rpm');
    expect(second.status).toBe(200);
    expect(second.headers.get('x-ratelimit-limit-requests')).toBe('2');
    const third = await post('/v1/completions', small, 'sk-rpm');
    expect(third.status).toBe(429);
    expect(Number(third.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(third.json.error).toMatchObject({ type: 'requests', code: 'rate_limit_exceeded' });
    expect(third.json.error.message).toMatch(/requests per min \(RPM\): Limit 2/);
    // Other keys are not affected.
    expect((await post('/v1/completions', small)).status).toBe(200);

    // 100 tokens a minute: a request that could never fit, one that fits, one that must wait.
    const huge = await post('/v1/completions', { ...small, max_tokens: 200 }, 'sk-tpm');
    expect([huge.status, huge.headers.get('retry-after'), huge.json.error.code]).toEqual([429, null, 'rate_limit_exceeded']);
    expect(huge.json.error.message).toMatch(/Request too large/);
    const fits = await post('/v1/completions', { prompt: golden[1].prompt, max_tokens: 90, temperature: 0 }, 'sk-tpm');
    expect(fits.status).toBe(200);
    const waits = await post('/v1/completions', { prompt: golden[1].prompt, max_tokens: 90, temperature: 0 }, 'sk-tpm');
    expect(waits.status).toBe(429);
    expect(waits.json.error).toMatchObject({ type: 'tokens', code: 'rate_limit_exceeded' });
    expect(Number(waits.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

    // The official client sees its own error class, status and headers.
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'sk-rpm', maxRetries: 0 });
    const err = await client.completions.create({ model: server.model, prompt: [1, 403], max_tokens: 2 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect((err as InstanceType<typeof OpenAI.RateLimitError>).status).toBe(429);
  });

  test('a bounded queue: past max-batch + max-queue requests in flight, 503 with Retry-After; all pages back after', async () => {
    // Twelve streams (8 + 4) whose clients read nothing hold their places; the thirteenth is refused.
    const session = http2.connect(server.url, { settings: { initialWindowSize: 1024 } });
    try {
      const stuck = Array.from({ length: 12 }, (_, i) => stuckStream(session, { prompt: [1, 260 + i], max_tokens: 300, temperature: 0 }));
      expect(await Promise.all(stuck.map((s) => s.status))).toEqual(Array(12).fill(200));
      await waitFor('12 requests in flight', (s) => s.admission.in_flight === 12);
      const refused = await post('/v1/completions', { prompt: [1, 403], max_tokens: 2 });
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(refused.json.error).toMatchObject({ type: 'server_error', code: 'server_overloaded' });
    } finally {
      session.destroy();
    }
    // The whole connection went away: every one of its requests is aborted and its pages freed.
    await waitFor('every stuck request to free its pages', idle);
  });

  test('WebSocket /v1/realtime-text: requests multiplexed by id on one socket, one cancelled; bad frames and keys refused', async () => {
    const alone = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'Tell me a story' }], max_tokens: 20, temperature: 0 });
    const refused = new WebSocket(server.wsUrl, { headers: { authorization: 'Bearer sk-wrong' } });
    expect(await new Promise((r) => refused.on('unexpected-response', (_req, res) => r(res.statusCode)))).toBe(401);

    const ws = new WebSocket(server.wsUrl, { headers: { authorization: `Bearer ${KEY}` } });
    await new Promise((r, j) => (ws.once('open', r), ws.once('error', j)));
    const frames = new Map<unknown, Record<string, any>[]>();
    let over = 0;
    const finished = new Promise<void>((resolve) => {
      ws.on('message', (data) => {
        const m = JSON.parse(String(data));
        frames.set(m.id, [...(frames.get(m.id) ?? []), m]);
        if (m.type === 'chunk' && m.id === 'b' && frames.get('b')!.length === 1) ws.send(JSON.stringify({ type: 'cancel', id: 'b' }));
        if (m.type === 'done' || m.type === 'cancelled' || m.type === 'error') over++;
        if (over === 4) resolve();
      });
    });
    ws.send(JSON.stringify({ type: 'request', id: 'a', endpoint: 'completions', body: { prompt: golden[1].prompt, max_tokens: 30, temperature: 0, return_token_ids: true } }));
    ws.send(JSON.stringify({ type: 'request', id: 'b', endpoint: 'completions', body: { prompt: golden[0].prompt, max_tokens: 400, temperature: 0 } }));
    ws.send(JSON.stringify({ type: 'request', id: 3, body: { messages: [{ role: 'user', content: 'Tell me a story' }], max_tokens: 20, temperature: 0 } }));
    ws.send('not json');
    await finished;
    const a = frames.get('a')!;
    expect(a.at(-1)).toMatchObject({ type: 'done', finish_reason: 'length', usage: { completion_tokens: 30 } });
    expect(a.slice(0, -1).every((f) => f.type === 'chunk' && f.data.object === 'text_completion')).toBe(true);
    expect(a.flatMap((f) => f.data?.choices[0]?.token_ids ?? [])).toEqual(golden[1].greedy.slice(0, 30));
    const c = frames.get(3)!;
    expect(c.at(-1)).toMatchObject({ type: 'done', usage: { completion_tokens: alone.json.usage.completion_tokens } });
    expect(c.map((f) => f.data?.choices[0]?.delta?.content ?? '').join('')).toBe(alone.json.choices[0].message.content);
    const b = frames.get('b')!;
    expect(b.at(-1)).toEqual({ type: 'cancelled', id: 'b' });
    expect(b.some((f) => f.type === 'done')).toBe(false);
    expect(b.filter((f) => f.type === 'chunk').length).toBeLessThan(400);
    expect(frames.get(null)).toEqual([expect.objectContaining({ type: 'error', id: null, status: 400 })]);
    ws.close();
    await waitFor('the cancelled request to free its pages', idle);
  });

  test('HTTP/2 (h2c, prior knowledge): several streams at once on one connection', async () => {
    const session = http2.connect(server.url);
    const request = (path: string, body?: unknown) =>
      new Promise<{ status: number; type: string; raw: string }>((resolve, reject) => {
        const s = session.request({ ':method': body ? 'POST' : 'GET', ':path': path, ...auth() });
        let status = 0;
        let type = '';
        let raw = '';
        s.on('response', (h) => ((status = Number(h[':status'])), (type = String(h['content-type']))));
        s.setEncoding('utf8');
        s.on('data', (d: string) => (raw += d));
        s.on('end', () => resolve({ status, type, raw }));
        s.on('error', reject);
        s.end(body ? JSON.stringify(body) : undefined);
      });
    try {
      const [a, b, c, models] = await Promise.all([
        request('/v1/completions', { prompt: golden[0].prompt, max_tokens: 32, temperature: 0, stream: true, return_token_ids: true }),
        request('/v1/completions', { prompt: golden[1].prompt, max_tokens: 32, temperature: 0, return_token_ids: true }),
        request('/v1/chat/completions', { messages: [{ role: 'user', content: 'Tell me a story' }], max_tokens: 20, temperature: 0, stream: true }),
        request('/v1/models'),
      ]);
      expect([a.status, a.type]).toEqual([200, 'text/event-stream; charset=utf-8']);
      expect(parseSse(a.raw).ids).toEqual(golden[0].greedy.slice(0, 32));
      expect(JSON.parse(b.raw).choices[0].token_ids).toEqual(golden[1].greedy.slice(0, 32));
      const alone = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'Tell me a story' }], max_tokens: 20, temperature: 0 });
      expect(parseSse(c.raw).text).toBe(alone.json.choices[0].message.content);
      expect(JSON.parse(models.raw).data[0].id).toBe(server.model);
    } finally {
      session.close();
    }
  });

  test('the official openai client: chat and text completions, streaming and not; its error classes', async () => {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: KEY, maxRetries: 0 });
    const messages = [{ role: 'system' as const, content: 'You tell stories.' }, { role: 'user' as const, content: 'Once upon a time' }];
    const whole = await client.chat.completions.create({ model: server.model, messages, max_tokens: 16, temperature: 0 });
    expect(whole.object).toBe('chat.completion');
    expect(whole.choices[0].finish_reason).toBe('length');
    const stream = await client.chat.completions.create({ model: server.model, messages, max_tokens: 16, temperature: 0, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined | null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe(whole.choices[0].message.content);
    expect(usage).toMatchObject({ completion_tokens: 16, prompt_tokens: whole.usage!.prompt_tokens });

    const completion = await client.completions.create({ model: server.model, prompt: golden[1].prompt, max_tokens: 12, temperature: 0 });
    const pieces = await client.completions.create({ model: server.model, prompt: golden[1].prompt, max_tokens: 12, temperature: 0, stream: true });
    let streamed = '';
    for await (const p of pieces) streamed += p.choices[0]?.text ?? '';
    expect(completion.choices[0].text).toBe(golden[1].greedy.slice(0, 12).map((id) => `<t${id}>`).join(''));
    expect(streamed).toBe(completion.choices[0].text);
    expect((await client.models.list()).data.map((m) => m.id)).toEqual([server.model]);

    await expect(client.chat.completions.create({ model: server.model, messages: [] })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    const wrong = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'sk-wrong', maxRetries: 0 });
    await expect(wrong.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  // Last: the server is gone after it.
  test('graceful shutdown: stops accepting, lets a running stream finish, aborts a stuck one after the grace period', async () => {
    const session = http2.connect(server.url, { settings: { initialWindowSize: 1024 } });
    const stuck = stuckStream(session, { prompt: [1, 300], max_tokens: 300, temperature: 0 });
    await waitFor('the stuck stream to block', (s) => s.requests.some((r) => r.blocked));
    const running = await fetch(`${server.url}/v1/completions`, { method: 'POST', headers: auth(), body: JSON.stringify({ prompt: golden[1].prompt, max_tokens: 40, temperature: 0, stream: true, return_token_ids: true }) });
    const closing = server.close({ graceMs: 3_000 });
    const refused = await fetch(`${server.url}/health`).then((r) => r.status, () => 'refused');
    expect([503, 'refused']).toContain(refused);
    const done = parseSse(await running.text());
    expect([done.done, done.ids]).toEqual([true, golden[1].greedy.slice(0, 40)]);
    await closing;
    // The stuck stream was aborted at the end of the grace period, its session destroyed with what it had buffered:
    // never a complete answer.
    expect(await stuck.resume()).not.toContain('data: [DONE]');
    session.destroy();
    const last = await server.stats();
    expect(last).toMatchObject({ status: 'draining', engine: null, requests: [] });
    expect(last.totals.shutdown_aborted).toBe(1);
    await expect(server.closed).resolves.toBeUndefined();
  });
});

/**
 * An outcome without usage's cached_tokens: how much of a prompt the prefix cache held depends on what the cases before
 * it left in that runtime's cache, not on the answer.
 */
function uncached(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(uncached);
  if (typeof v !== 'object' || v === null) return v;
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, k === 'cached_tokens' ? 'backend' : uncached(x)]));
}

describe.skipIf(RUNTIMES.length < 2)('both runtimes', () => {
  test('answer every case of the shared table alike (statuses, headers, error shapes, greedy text and ids)', () => {
    expect(outcomes.size).toBe(CASES.length);
    for (const [name, by] of outcomes) expect(uncached(by.get('node')), name).toEqual(uncached(by.get('chromium')));
  });
});
