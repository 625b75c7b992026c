// Rerank on the engine (rerank.ts, and the embeddings queue it runs in): pairs in the tokenizer's pair template with
// their token-type splits, scores ranked best first, topN, documents cut to the context (truncate, the default) or
// refused, bad requests refused with the field named, pairs packed with other requests' inputs, abort; and the calls
// each model kind refuses. The reranker is an exact stand-in (test-encoders.ts): its score is the number of the
// document's words that occur in the query.

import { describe, expect, test } from 'vitest';
import { Engine } from './engine.ts';
import { Embedder } from './embeddings.ts';
import { ContextLengthExceededError, InvalidRequestError, ModelKindError } from './errors.ts';
import { EMBED_LIMITS } from './contract.ts';
import { rankedResults } from './rerank.ts';
import { RecordingEncoder, RecordingReranker, wordPiece } from './test-encoders.ts';

const now = () => performance.now();
const HELLO = 57;
const NOTE = 56;

describe('rerank(): pairs and ranking', () => {
  test("each document is paired with the query as [CLS] q [SEP] d [SEP], its part of token type 1; results best first, ties in the request's order", async () => {
    const reranker = new RecordingReranker();
    const e = new Embedder(reranker, wordPiece(), now);
    const r = await e.rerank({ query: 'hello note', documents: ['abc', 'note', 'hello note', 'note ab'] });
    expect(r.results).toEqual([
      { index: 2, score: 2 },
      { index: 1, score: 1 },
      { index: 3, score: 1 },
      { index: 0, score: 0 },
    ]);
    const pairs = reranker.passes.flatMap((p) => p.sequences);
    const splits = reranker.passes.flatMap((p) => p.typeSplits);
    expect(pairs[1]).toEqual([2, HELLO, NOTE, 3, NOTE, 3]);
    expect(splits[1]).toBe(4);
    expect(pairs[0]).toEqual([2, HELLO, NOTE, 3, 4, 31, 32, 3]); // 'abc' is a ##b ##c
    expect(r.promptTokens).toBe(pairs.reduce((n, p) => n + p.length, 0));
    expect(r.truncated).toEqual([]);
  });

  test('topN keeps the best n; rankedResults sorts by the first output', async () => {
    const e = new Embedder(new RecordingReranker(), wordPiece(), now);
    const r = await e.rerank({ query: 'hello note', documents: ['abc', 'hello note', 'note'], topN: 2 });
    expect(r.results.map((x) => x.index)).toEqual([1, 2]);
    expect(rankedResults([Float32Array.of(0.5, 9), Float32Array.of(-1), Float32Array.of(3)], 5)).toEqual([
      { index: 2, score: 3 },
      { index: 0, score: 0.5 },
      { index: 1, score: -1 },
    ]);
  });

  test('a document longer than the context is cut at its end (truncate, the default), the query kept whole; truncate: false refuses it naming the document', async () => {
    const reranker = new RecordingReranker(64, 4);
    // The stand-in's context is 8 tokens: [CLS] hello note [SEP] leaves 3 for the document and [SEP].
    const e = new Embedder(reranker, wordPiece(), now);
    const long = 'note note note note note hello';
    const r = await e.rerank({ query: 'hello note', documents: ['note', long] });
    expect(r.truncated).toEqual([1]);
    const pair = reranker.passes[0].sequences[1];
    expect(pair).toEqual([2, HELLO, NOTE, 3, NOTE, NOTE, NOTE, 3]);
    expect(r.results).toEqual([
      { index: 1, score: 3 },
      { index: 0, score: 1 },
    ]);
    const err = await e.rerank({ query: 'hello note', documents: ['note', long], truncate: false }).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(ContextLengthExceededError);
    expect(err).toMatchObject({ reason: 'document', input: 1, limit: 8, promptTokens: 11 });
    expect((err as Error).message).toMatch(/document 1 of the rerank request/);
    // A query that leaves no room for one document token.
    await expect(e.rerank({ query: 'hello note hello note hello note', documents: ['note'] })).rejects.toMatchObject({ name: 'InvalidRequestError', field: 'query' });
  });

  test('bad requests are refused naming the field: no query, no documents, an empty document, too many, a bad topN, an unknown field', async () => {
    const e = new Embedder(new RecordingReranker(), wordPiece(), now);
    const refused = async (request: unknown, field: string) => {
      const err = await e.rerank(request as never).catch((x: unknown) => x);
      expect(err).toBeInstanceOf(InvalidRequestError);
      expect((err as InvalidRequestError).field).toBe(field);
    };
    await refused({ documents: ['a'] }, 'query');
    await refused({ query: '', documents: ['a'] }, 'query');
    await refused({ query: 'q', documents: [] }, 'documents');
    await refused({ query: 'q', documents: 'a' }, 'documents');
    await refused({ query: 'q', documents: ['a', ''] }, 'documents[1]');
    await refused({ query: 'q', documents: ['a', 3] }, 'documents[1]');
    await refused({ query: 'q', documents: Array.from({ length: EMBED_LIMITS.inputs + 1 }, () => 'a') }, 'documents');
    await refused({ query: 'q', documents: ['a'], topN: 0 }, 'topN');
    await refused({ query: 'q', documents: ['a'], topN: 1.5 }, 'topN');
    await refused({ query: 'q', documents: ['a'], truncate: 'yes' }, 'truncate');
    await refused({ query: 'q', documents: ['a'], top_n: 2 }, 'top_n');
  });

  test("pairs share passes with other requests, within the encoder's bounds; an abort drops the pairs not yet scored", async () => {
    const reranker = new RecordingReranker(24, 2);
    const e = new Embedder(reranker, wordPiece(), now);
    const docs = ['note', 'hello', 'abc', 'note hello', 'b', 'c'];
    const [a, b] = await Promise.all([e.rerank({ query: 'note', documents: docs }), e.rerank({ query: 'hello', documents: ['hello'] })]);
    expect(a.results[0]).toEqual({ index: 0, score: 1 });
    expect(b.results).toEqual([{ index: 0, score: 1 }]);
    expect(reranker.passes.every((p) => p.sequences.length <= 2)).toBe(true);
    // Round-robin: the one-pair request goes in the first pass after it came (the second), not after the six-pair one's.
    expect(reranker.passes[1].sequences).toContainEqual([2, HELLO, 3, HELLO, 3]);
    const controller = new AbortController();
    const passes = reranker.passes.length;
    const aborted = e.rerank({ query: 'note', documents: docs }, controller.signal);
    controller.abort(new Error('gone'));
    await expect(aborted).rejects.toThrow('gone');
    expect(reranker.passes.length - passes).toBeLessThanOrEqual(1);
  });
});

describe('an engine answers the calls of its model kind', () => {
  test('a reranker reranks and refuses embed(), generate() and preload(); an embedding model refuses rerank(), saying what to load', async () => {
    const reranker = new Engine({ encoder: new RecordingReranker(), tokenizer: wordPiece() });
    expect((await reranker.rerank({ query: 'note', documents: ['note', 'abc'] })).results[0].index).toBe(0);
    await expect(reranker.embed({ input: 'note' })).rejects.toMatchObject({ code: 'wrong_model_kind', kind: 'rerank', call: 'embed' });
    await expect(reranker.start({ prompt: 'note' })).rejects.toMatchObject({ code: 'wrong_model_kind', kind: 'rerank', call: 'generate' });
    await expect(reranker.preload({ prompt: 'note' })).rejects.toMatchObject({ kind: 'rerank', call: 'preload' });
    await reranker.destroy();
    const embedder = new Engine({ encoder: new RecordingEncoder(), tokenizer: wordPiece() });
    const err = await embedder.rerank({ query: 'note', documents: ['note'] }).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(ModelKindError);
    expect(err).toMatchObject({ kind: 'embedding', call: 'rerank' });
    expect((err as Error).message).toMatch(/load a reranker/);
    await embedder.destroy();
  });
});
