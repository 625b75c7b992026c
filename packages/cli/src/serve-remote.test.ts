// The remote backend (createEngine({ remote })) against a real `intab serve`, once per runtime: stories260K in this
// process (--runtime node: onnxruntime-node's CPU provider here) and on intab's WebGPU kernels in headless Chromium
// (--runtime chromium), behind HTTP. Greedy ids that cross the wire (vLLM's return_token_ids) equal the golden ids,
// the OpenAI surface gives what the server gives, an abort reaches the server (its stream ends and the pages come
// back), the server's 429 becomes a RemoteHttpError with its Retry-After, and a JSON schema the server enforces
// streams partial-JSON events and validates here. INTAB_SERVE_RUNTIME=node (or chromium) runs one runtime only.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Chunk } from '@intab/engine/contract';
import { createEngine, RemoteHttpError, type IntabEngine } from 'intab';
import { startServer, type RunningServer } from './serve.ts';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const SHARED = resolve(process.env.INTAB_SHARED ?? join(ROOT, '..', 'shared'));
const MODEL_DIR = join(SHARED, 'models', 'stories260K');
const golden = JSON.parse(readFileSync(join(MODEL_DIR, 'golden.json'), 'utf8')).cases as { prompt: number[]; greedy: number[] }[];
const TEMPLATE = "{% for m in messages %}{{ m['role'] + ': ' + m['content'] + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ 'assistant:' }}{% endif %}";
const KEY = 'sk-remote';
const RUNTIMES = (['node', 'chromium'] as const).filter((r) => !process.env.INTAB_SERVE_RUNTIME || process.env.INTAB_SERVE_RUNTIME === r);

let server: RunningServer;
let engine: IntabEngine;

async function collect(it: AsyncIterable<Chunk>): Promise<Chunk[]> {
  const out: Chunk[] = [];
  for await (const c of it) out.push(c);
  return out;
}

async function until(cond: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

for (const runtime of RUNTIMES) describe(`the remote backend against intab serve --runtime ${runtime}`, () => {
  beforeAll(async () => {
    server = await startServer({
      model: join(MODEL_DIR, 'stories260K-vocab-ud.gguf'),
      port: 0,
      runtime,
      chatTemplate: TEMPLATE,
      maxBatch: 4,
      apiKeys: [KEY, { key: 'sk-slow', rateLimit: { rpm: 1 } }],
      log: () => {},
    });
    engine = await createEngine({ remote: { baseURL: `${server.url}/v1`, model: server.model, apiKey: KEY } });
  }, 180_000);

  afterAll(async () => {
    await engine?.destroy();
    await server?.close({ graceMs: 0 });
  }, 60_000);

  test('the engine is the server’s: its model, its context length', () => {
    expect(engine.info.backend.name).toBe('remote');
    expect(engine.info.remote).toEqual({ baseURL: `${server.url}/v1`, model: server.model });
    expect(engine.info.contextLength).toBe(server.info.contextLength);
    expect(engine.info.warnings).toBeUndefined();
  });

  test('greedy ids over the wire equal the golden ids, both cases at once', async () => {
    const runs = await Promise.all(golden.map((g) => collect(engine.generate({ promptIds: g.prompt, maxTokens: g.greedy.length, temperature: 0, ignoreEos: true }))));
    runs.forEach((chunks, i) => {
      expect(chunks.flatMap((c) => c.ids)).toEqual(golden[i]!.greedy);
      expect(chunks.at(-1)).toMatchObject({ finishReason: 'length', metrics: { promptTokens: golden[i]!.prompt.length, completionTokens: golden[i]!.greedy.length } });
    });
  });

  test('chat completions, streamed and not, give what the server gives', async () => {
    const body = { messages: [{ role: 'user', content: 'Tell me a story.' }], max_tokens: 24, temperature: 0 };
    const direct = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.json());
    const reply = await engine.chat.completions.create(body);
    expect(reply.choices[0]!.message.content).toBe(direct.choices[0].message.content);
    expect(reply.usage.completion_tokens).toBe(direct.usage.completion_tokens);
    let streamed = '';
    for await (const c of await engine.chat.completions.create({ ...body, stream: true })) streamed += c.choices[0]?.delta.content ?? '';
    expect(streamed).toBe(direct.choices[0].message.content);
  });

  test('an abort ends the stream with abort, and the server frees the sequence’s pages', async () => {
    const controller = new AbortController();
    const chunks: Chunk[] = [];
    for await (const c of engine.generate({ promptIds: golden[0]!.prompt, maxTokens: 400, temperature: 0, ignoreEos: true }, { signal: controller.signal })) {
      chunks.push(c);
      if (chunks.length === 2) controller.abort();
    }
    expect(chunks.at(-1)!.finishReason).toBe('abort');
    await until(async () => {
      const s = await server.engineStats();
      return s.streams === 0 && s.availablePages === s.totalPages;
    }, 'the server to free the aborted request');
  });

  test("a JSON schema is enforced by the server and checked here; partial-JSON events stream", async () => {
    const schema = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] };
    const chunks = await collect(engine.generate({ messages: [{ role: 'user', content: 'Yes or no?' }], maxTokens: 100, temperature: 0, responseFormat: { type: 'json_schema', schema } }));
    const last = chunks.at(-1)!;
    expect(last.finishReason).toBe('stop');
    expect(last.partial).toEqual(JSON.parse(chunks.map((c) => c.text).join('')));
    expect(chunks.flatMap((c) => c.json ?? []).some((e) => e.kind === 'key' && e.path[0] === 'ok')).toBe(true);
  });

  test('fields nothing reads are ignored, as OpenAI does, and named in x-intab-ignored-fields', async () => {
    const res = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2, temprature: 0, user: 'u1', return_token_ids: true }) });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-intab-ignored-fields')).toBe('temprature, user');
    expect((await res.json()).choices[0].token_ids).toHaveLength(2);
  });

  test("the server's 429 is a RemoteHttpError carrying its Retry-After (longer than the caller will wait)", async () => {
    const slow = await createEngine({ remote: { baseURL: `${server.url}/v1`, model: server.model, apiKey: 'sk-slow', retries: { maxRetryAfterMs: 1000 } } });
    await collect(slow.generate({ promptIds: golden[0]!.prompt, maxTokens: 2 }));
    const err = await collect(slow.generate({ promptIds: golden[0]!.prompt, maxTokens: 2 })).catch((e) => e);
    expect(err).toBeInstanceOf(RemoteHttpError);
    expect(err.status).toBe(429);
    expect(err.serverCode).toBe('rate_limit_exceeded');
    expect(err.retryAfterMs).toBeGreaterThan(1000);
    await slow.destroy();
  });
});
