// Embeddings through `intab serve` (--runtime node, in this process) with the official `openai` client: a seeded
// all-MiniLM-L6-shaped GGUF (make-model, 2 layers) served on this machine's backend ('auto': onnxruntime-node's CPU
// provider here, intab's kernels on a hardware GPU), its vectors against llama.cpp's (node-llama-cpp) for the same texts,
// as base64 (the client's default) and as floats; OpenAI's errors (dimensions on a model not trained for them, an
// input past the context and `truncate`, a chat request to an embedding model, an empty input); and the remote backend
// (createEngine({ remote })) embedding through the server with the same vectors.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { EMBED_INPUTS, cosine } from '@intab/testing/embed-inputs';
import { createEngine } from 'intab';
import { writeSyntheticModel } from './make-model.ts';
import { startServer, type RunningServer } from './serve.ts';
import { llamaCppEmbeddings } from './test-llamacpp.ts';

const TEXTS = [0, 3, 8, 12, 19].map((i) => EMBED_INPUTS[i]);

let dir: string;
let server: RunningServer;
let oracle: { ids: number[][]; vectors: number[][] };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'intab-serve-embed-'));
  const model = join(dir, 'minilm.gguf');
  writeSyntheticModel({ like: 'all-minilm-l6', dtype: 'f32', layers: 2, seed: 5, out: model });
  oracle = await llamaCppEmbeddings(model, TEXTS);
  server = await startServer({ model, port: 0, runtime: 'node', seed: 1, log: () => {} });
}, 240_000);

afterAll(async () => {
  await server?.close({ graceMs: 0 });
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

const client = () => new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });

describe('POST /v1/embeddings', () => {
  test("the official client's embeddings.create: llama.cpp's vectors within cosine 0.9999, as base64 and as floats, with usage", async () => {
    expect(server.info.embedding).toMatchObject({ dimensions: 384, pooling: 'mean', normalized: true });
    const base64 = await client().embeddings.create({ model: server.model, input: TEXTS });
    expect(base64).toMatchObject({ object: 'list', model: server.model, usage: { prompt_tokens: oracle.ids.flat().length, total_tokens: oracle.ids.flat().length } });
    expect(base64.data.map((d) => d.index)).toEqual([0, 1, 2, 3, 4]);
    const floats = await client().embeddings.create({ model: server.model, input: TEXTS, encoding_format: 'float' });
    for (let i = 0; i < TEXTS.length; i++) {
      expect(cosine(base64.data[i].embedding, oracle.vectors[i])).toBeGreaterThanOrEqual(0.9999);
      // base64 carries the f32 bytes exactly: the same numbers as the JSON floats.
      expect(base64.data[i].embedding).toEqual(floats.data[i].embedding);
    }
    const one = await client().embeddings.create({ model: server.model, input: TEXTS[1] });
    expect(cosine(one.data[0].embedding, oracle.vectors[1])).toBeGreaterThanOrEqual(0.9999);
    const models = await client().models.list();
    expect(models.data.map((m) => m.id)).toEqual([server.model]);
  });

  test("OpenAI's errors: dimensions the model was not trained for, an input past the context (and truncate), a chat request, an empty input", async () => {
    const refused = async (body: Record<string, unknown>, path = 'embeddings') => {
      const r = await fetch(`${server.url}/v1/${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: server.model, ...body }) });
      return { status: r.status, error: ((await r.json()) as { error: { code: string | null; param: string | null; message: string } }).error };
    };
    expect(await refused({ input: 'a', dimensions: 64 })).toMatchObject({ status: 400, error: { param: 'dimensions' } });
    const long = 'word '.repeat(600);
    const over = await refused({ input: ['short', long] });
    expect(over).toMatchObject({ status: 400, error: { code: 'context_length_exceeded', param: 'input' } });
    expect(over.error.message).toContain('truncate: true');
    const cut = await fetch(`${server.url}/v1/embeddings`, { method: 'POST', body: JSON.stringify({ input: ['short', long], truncate: true }) });
    expect(cut.status).toBe(200);
    expect(((await cut.json()) as { usage: { prompt_tokens: number } }).usage.prompt_tokens).toBeLessThanOrEqual(512 + 3);
    expect(await refused({ messages: [{ role: 'user', content: 'hi' }] }, 'chat/completions')).toMatchObject({ status: 400, error: { code: 'wrong_model_kind', param: 'model' } });
    expect(await refused({ input: '' })).toMatchObject({ status: 400, error: { param: 'input' } });
    expect(await refused({ input: [] })).toMatchObject({ status: 400, error: { param: 'input' } });
    const many = await refused({ input: Array.from({ length: 10_000 }, () => 'x') });
    expect(many).toMatchObject({ status: 400, error: { param: 'input' } });
    expect(many.error.message).toContain('2048');
  });

  test("embeddings go through the server's admission: charged to the key's rate limits (429 past them), counted in /v1/stats", async () => {
    const limited = await startServer({ model: join(dir, 'minilm.gguf'), port: 0, runtime: 'node', seed: 1, log: () => {}, apiKeys: [{ key: 'sk-embed', rateLimit: { rpm: 2, tpm: 100_000 } }] });
    try {
      const post = (input: unknown) => fetch(`${limited.url}/v1/embeddings`, { method: 'POST', headers: { authorization: 'Bearer sk-embed', 'content-type': 'application/json' }, body: JSON.stringify({ input }) });
      const first = await post(TEXTS[0]);
      expect(first.status).toBe(200);
      expect(first.headers.get('x-ratelimit-limit-requests')).toBe('2');
      expect(first.headers.get('x-ratelimit-remaining-requests')).toBe('1');
      expect((await post(TEXTS.slice(0, 2))).status).toBe(200);
      const third = await post(TEXTS[2]);
      expect(third.status).toBe(429);
      expect(third.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(((await third.json()) as { error: { code: string } }).error.code).toBe('rate_limit_exceeded');
      const stats = (await (await fetch(`${limited.url}/v1/stats`, { headers: { authorization: 'Bearer sk-embed' } })).json()) as { totals: Record<string, number> };
      expect(stats.totals).toMatchObject({ completed: 2, refused_429: 1 });
    } finally {
      await limited.close({ graceMs: 0 });
    }
  }, 120_000);

  test('the remote backend embeds through the server: the same vectors, by embeddings.create and embed()', async () => {
    const engine = await createEngine({ remote: { baseURL: `${server.url}/v1`, model: server.model } });
    try {
      const viaServer = await client().embeddings.create({ model: server.model, input: TEXTS, encoding_format: 'float' });
      const created = await engine.embeddings.create({ input: TEXTS });
      const { embeddings, promptTokens } = await engine.embed({ input: TEXTS });
      expect(promptTokens).toBe(oracle.ids.flat().length);
      for (let i = 0; i < TEXTS.length; i++) {
        expect(created.data[i].embedding).toEqual(viaServer.data[i].embedding);
        expect(Array.from(embeddings[i])).toEqual(viaServer.data[i].embedding);
      }
      await expect(engine.embed({ input: 'a', dimensions: 3 })).rejects.toMatchObject({ name: 'RemoteHttpError', status: 400 });
    } finally {
      await engine.destroy();
    }
  });
});
