// Rerank through `intab serve` (--runtime node, in this process): a seeded bge-reranker-base-shaped GGUF (make-model,
// 2 layers, one token type, RoBERTa's pair form) served on this machine's backend ('auto': onnxruntime-node's CPU
// provider here), POST /v1/rerank in the shape llama.cpp's server, Jina and Cohere share, its scores against llama.cpp's
// logits for the same pair ids (node-llama-cpp), top_n and return_documents, the errors, and the remote backend (createEngine({ remote }).rerank) through the server with the same scores.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { RERANK_PAIRS } from '@intab/testing/embed-inputs';
import { openEncoderGguf, openTokenizer, pathSource, rerankPair } from '@intab/model';
import { createEngine } from 'intab';
import { writeSyntheticModel } from './make-model.ts';
import { startServer, type RunningServer } from './serve.ts';
import { llamaCppRank } from './test-rerank-oracle.ts';

const QUERY = RERANK_PAIRS[0].query;
const DOCUMENTS = RERANK_PAIRS.filter((p) => p.query === QUERY).map((p) => p.document);

let dir: string;
let server: RunningServer;
/** llama.cpp's logit of each document's pair. */
let logits: number[];

interface RerankBody {
  object: string;
  model: string;
  results: { index: number; relevance_score: number; document?: { text: string } }[];
  usage: { prompt_tokens: number; total_tokens: number };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'intab-serve-rerank-'));
  const model = join(dir, 'bge-reranker.gguf');
  writeSyntheticModel({ like: 'bge-reranker-base', dtype: 'f32', layers: 2, seed: 9, out: model });
  const tokenizer = openTokenizer(await openEncoderGguf(await pathSource(model)))!;
  const ids = DOCUMENTS.map((d) => rerankPair(tokenizer, QUERY, d, { maxTokens: 512 }).ids);
  logits = (await llamaCppRank(model, ids)).logits.map((l) => l[0]);
  server = await startServer({ model, port: 0, runtime: 'node', seed: 1, log: () => {} });
}, 240_000);

afterAll(async () => {
  await server?.close({ graceMs: 0 });
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

const post = (body: unknown) => fetch(`${server.url}/v1/rerank`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('POST /v1/rerank', () => {
  test("llama.cpp's logits as relevance_score, best first, with usage; top_n and return_documents; { text } documents", async () => {
    expect(server.info.rerank).toEqual({ labels: ['LABEL_0'] });
    const res = await post({ model: 'bge', query: QUERY, documents: DOCUMENTS });
    expect(res.status).toBe(200);
    const body = (await res.json()) as RerankBody;
    expect(body).toMatchObject({ object: 'list', model: 'bge' });
    expect(body.usage.prompt_tokens).toBeGreaterThan(0);
    const expected = logits.map((score, index) => ({ index, score })).sort((a, b) => b.score - a.score);
    expect(body.results.map((r) => r.index)).toEqual(expected.map((x) => x.index));
    for (const r of body.results) expect(Math.abs(r.relevance_score - logits[r.index])).toBeLessThan(5e-3);
    expect(body.results[0].document).toBeUndefined();
    const top = (await (await post({ query: QUERY, documents: DOCUMENTS.map((text) => ({ text })), top_n: 2, return_documents: true })).json()) as RerankBody;
    expect(top.results).toHaveLength(2);
    expect(top.results.map((r) => r.index)).toEqual(expected.slice(0, 2).map((x) => x.index));
    expect(top.results[0].document).toEqual({ text: DOCUMENTS[expected[0].index] });
  });

  test('errors: no documents, an empty document, a bad top_n, a pair past the context with truncate: false (cut by default), embeddings and chat to a reranker', async () => {
    const refused = async (body: unknown, path = 'rerank') => {
      const r = await fetch(`${server.url}/v1/${path}`, { method: 'POST', body: JSON.stringify(body) });
      return { status: r.status, error: ((await r.json()) as { error: { code: string | null; param: string | null; message: string } }).error };
    };
    expect(await refused({ query: QUERY, documents: [] })).toMatchObject({ status: 400, error: { param: 'documents' } });
    expect(await refused({ query: QUERY, documents: ['a', ''] })).toMatchObject({ status: 400, error: { param: 'documents[1]' } });
    expect(await refused({ query: QUERY, documents: ['a'], top_n: 0 })).toMatchObject({ status: 400, error: { param: 'top_n' } });
    const long = 'word '.repeat(600);
    expect(await refused({ query: QUERY, documents: ['a', long], truncate: false })).toMatchObject({ status: 400, error: { code: 'context_length_exceeded', param: 'documents' } });
    expect(await refused({ input: 'a' }, 'embeddings')).toMatchObject({ status: 400, error: { code: 'wrong_model_kind' } });
    expect(await refused({ messages: [{ role: 'user', content: 'hi' }] }, 'chat/completions')).toMatchObject({ status: 400, error: { code: 'wrong_model_kind' } });
    const cut = (await (await post({ query: QUERY, documents: ['a', long] })).json()) as RerankBody;
    expect(cut.results).toHaveLength(2);
    // The long pair cut to the context (512), beside the short pair ('a' and the query: a few tokens).
    expect(cut.usage.prompt_tokens).toBeGreaterThan(512);
    expect(cut.usage.prompt_tokens).toBeLessThanOrEqual(512 + 24);
  });

  test('the remote backend reranks through the server: the same scores, best first, topN', async () => {
    const engine = await createEngine({ remote: { baseURL: `${server.url}/v1`, model: server.model } });
    try {
      const viaServer = (await (await post({ query: QUERY, documents: DOCUMENTS })).json()) as RerankBody;
      const { results, promptTokens } = await engine.rerank({ query: QUERY, documents: DOCUMENTS });
      expect(results).toEqual(viaServer.results.map((r) => ({ index: r.index, score: r.relevance_score })));
      expect(promptTokens).toBe(viaServer.usage.prompt_tokens);
      expect((await engine.rerank({ query: QUERY, documents: DOCUMENTS, topN: 1 })).results).toEqual(results.slice(0, 1));
      await expect(engine.rerank({ query: QUERY, documents: [] })).rejects.toMatchObject({ name: 'RemoteHttpError', status: 400 });
    } finally {
      await engine.destroy();
    }
  });
});
