// aggregate() and the responses store on real IndexedDB in Chromium: the finished record equals the streamed text for
// engine chunks, OpenAI chunks and plain text; a reader that cancels, an aborted pipe and an aborted request leave the
// partial text marked incomplete, a failing source leaves it failed; a record whose writer is gone reads incomplete,
// one still streaming elsewhere reads in_progress; backpressure holds; list order, limit and pages; delete and clear
// (also mid-stream); bad input and a full storage quota (CDP override) are ResponseStoreErrors.

import { afterAll, describe, expect, test } from 'vitest';
import { cdp } from 'vitest/browser';
import { openDB } from 'idb';
import type { Chunk } from '@intab/engine/contract';
import { ResponseStoreError } from './errors.ts';
import { toChatCompletionChunks, type ChatCompletionChunk } from './openai.ts';
import { aggregate, AggregateStream, Responses, responses } from './responses.ts';

const made: Responses[] = [];
/** A store in a database of its own. */
function fresh(): Responses {
  const store = new Responses({ name: `intab-responses-test-${crypto.randomUUID()}` });
  made.push(store);
  return store;
}

afterAll(async () => {
  for (const s of made) {
    s.close();
    await new Promise((resolve) => {
      const req = indexedDB.deleteDatabase(s.name);
      req.onsuccess = req.onerror = req.onblocked = resolve;
    });
  }
});

/** A pull-based source of these items (or an error at `failAt`), which counts its pulls and records a cancel. */
function source<T>(items: T[], failAt?: { index: number; error: unknown }) {
  let i = 0;
  const seen = { pulls: 0, cancelled: false as boolean, reason: undefined as unknown };
  const stream = new ReadableStream<T>(
    {
      pull(c) {
        seen.pulls++;
        if (failAt && i === failAt.index) return c.error(failAt.error);
        if (i < items.length) c.enqueue(items[i++]);
        else c.close();
      },
      cancel(reason) {
        seen.cancelled = true;
        seen.reason = reason;
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, seen };
}

async function all<T>(stream: ReadableStream<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of stream) out.push(x);
  return out;
}

const WORDS = ['Once', ' upon', ' a', ' time', ',', ' a', ' llama', ' 🦙', ' walked', '\n', ' into', ' a', ' bar', '.'];
/** Engine chunks: one per word, the last with finishReason and metrics. */
function engineChunks(finish: Chunk['finishReason'] = 'length', words = WORDS): Chunk[] {
  return words.map((text, i) => ({
    text,
    ids: [i],
    finishReason: i === words.length - 1 ? finish : null,
    ...(i === words.length - 1 ? { metrics: { queueMs: 1, ttftMs: 2, promptTokens: 3, cachedTokens: 0, completionTokens: words.length, prefillTokensPerSecond: 1, decodeTokensPerSecond: 1, pausedMs: 0 } } : {}),
  }));
}

async function* iterate<T>(items: T[]): AsyncGenerator<T> {
  yield* items;
}

/** The OpenAI chunks of an engine stream; an aborted one throws AbortError after them: those before it (a stream that just ends). */
async function openAiChunks(chunks: Chunk[]): Promise<ChatCompletionChunk[]> {
  const out: ChatCompletionChunk[] = [];
  try {
    for await (const c of toChatCompletionChunks(iterate(chunks), { id: 'chatcmpl-test', created: 1, model: 'stories260K' }, { includeUsage: true })) out.push(c);
  } catch (e) {
    if ((e as Error).name !== 'AbortError') throw e;
  }
  return out;
}

const textOf = (chunks: (Chunk | ChatCompletionChunk)[]) => chunks.map((c) => ('choices' in c ? (c.choices[0]?.delta.content ?? '') : c.text)).join('');

// First: before anything in this origin has used IndexedDB (see inside).
describe('a full storage quota', () => {
  test("a full storage quota (CDP override) ends the stream with a 'quota' error carrying all the text; what was stored stays", async () => {
    // Room for a new database, its header and a short piece, not for a long one. Chromium's IndexedDB reads the quota
    // once, when the origin first uses IndexedDB, so this test runs first.
    const session = cdp();
    const { usage = 0 } = await navigator.storage.estimate();
    await session.send('Storage.overrideQuotaForOrigin', { origin: location.origin, quotaSize: usage + (1 << 20) });
    const store = fresh();
    const stream = aggregate<string>({ store });
    // Text that does not compress: Chromium's IndexedDB compresses large values (4 MiB of one letter takes 0.2 MB).
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    let big = '';
    // getRandomValues gives at most 64 KiB per call.
    for (let i = 0; i < 64; i++) big += Array.from(crypto.getRandomValues(new Uint8Array(1 << 16)), (b) => alphabet[b & 63]).join('');
    const src = source(['stored ', big, 'never']);
    let err: unknown;
    try {
      const reader = src.stream.pipeThrough(stream).getReader();
      expect((await reader.read()).value).toBe('stored ');
      err = await reader.read().catch((e) => e);
    } finally {
      await session.send('Storage.overrideQuotaForOrigin', { origin: location.origin });
    }
    expect(err).toBeInstanceOf(ResponseStoreError);
    expect(err).toMatchObject({ problem: 'quota', responseId: stream.id, message: /storage is full/ });
    expect((err as ResponseStoreError).text).toBe('stored ' + big);
    expect(src.seen.cancelled).toBe(true);
    const r = await store.get(stream.id);
    expect(r).toMatchObject({ text: 'stored ', complete: false });
    expect(['failed', 'incomplete']).toContain(r!.status);
  });
});

describe('aggregate: the finished record equals the streamed text', () => {
  test('engine chunks pass through unchanged; the record is complete with the request, model and metrics', async () => {
    const store = fresh();
    const chunks = engineChunks();
    const stream = aggregate<Chunk>({ store, model: 'stories260K', request: { prompt: 'Once' } });
    expect(stream).toBeInstanceOf(AggregateStream);
    const got = await all(source(chunks).stream.pipeThrough(stream));
    expect(got).toEqual(chunks);
    const r = await store.get(stream.id);
    expect(r).toMatchObject({ id: stream.id, text: textOf(got), textLength: textOf(got).length, status: 'completed', complete: true, finishReason: 'length', model: 'stories260K', request: { prompt: 'Once' } });
    expect(r!.metrics).toEqual(chunks.at(-1)!.metrics);
    expect(r!.updatedAt).toBeGreaterThanOrEqual(r!.createdAt);
  });

  test('OpenAI chat completion chunks (role chunk, finish_reason, usage): text, completion id, model and usage', async () => {
    const store = fresh();
    const chunks = await openAiChunks(engineChunks('stop'));
    const stream = aggregate<ChatCompletionChunk>({ store, id: 'chat-1' });
    expect(stream.id).toBe('chat-1');
    const got = await all(source(chunks).stream.pipeThrough(stream));
    expect(got).toEqual(chunks);
    const r = await store.get('chat-1');
    expect(r).toMatchObject({ text: WORDS.join(''), status: 'completed', complete: true, finishReason: 'stop', model: 'stories260K', completionId: 'chatcmpl-test', usage: { completion_tokens: WORDS.length } });
  });

  test('plain text (after textOnly) is complete when it ends; many small chunks keep their order', async () => {
    const store = fresh();
    const pieces = Array.from({ length: 300 }, (_, i) => `${i},`);
    const stream = aggregate<string>({ store });
    expect((await all(source(pieces).stream.pipeThrough(stream))).join('')).toBe(pieces.join(''));
    expect(await store.get(stream.id)).toMatchObject({ text: pieces.join(''), complete: true, finishReason: null });
  });

  test('the default store is `responses` (database intab-responses)', async () => {
    const stream = aggregate<string>();
    await all(source(['a', 'b']).stream.pipeThrough(stream));
    expect(responses.name).toBe('intab-responses');
    expect(await responses.get(stream.id)).toMatchObject({ text: 'ab', complete: true });
    expect(await responses.delete(stream.id)).toBe(true);
  });
});

describe('aggregate: a stream that stops early keeps what arrived', () => {
  test('a reader that breaks out: incomplete, the text it read, and the source cancelled', async () => {
    const store = fresh();
    const src = source(engineChunks());
    const stream = aggregate<Chunk>({ store });
    let read = '';
    for await (const c of src.stream.pipeThrough(stream)) {
      read += c.text;
      if (read.length > 10) break;
    }
    expect(src.seen.cancelled).toBe(true);
    const r = await store.get(stream.id);
    expect(r).toMatchObject({ text: read, status: 'incomplete', complete: false, finishReason: null });
    expect(r!.error).toBeUndefined();
  });

  test('pipeThrough with an AbortSignal: incomplete', async () => {
    const store = fresh();
    const src = source(engineChunks());
    const controller = new AbortController();
    const stream = aggregate<Chunk>({ store });
    const reader = src.stream.pipeThrough(stream, { signal: controller.signal }).getReader();
    const first = await reader.read();
    controller.abort();
    await expect(reader.read()).rejects.toMatchObject({ name: 'AbortError' });
    await expect.poll(async () => (await store.get(stream.id))?.status).toBe('incomplete');
    expect((await store.get(stream.id))!.text).toBe(first.value!.text);
  });

  test("an engine request aborted (finishReason 'abort') or an OpenAI stream that just ends: incomplete", async () => {
    const store = fresh();
    const a = aggregate<Chunk>({ store });
    await all(source(engineChunks('abort')).stream.pipeThrough(a));
    expect(await store.get(a.id)).toMatchObject({ text: WORDS.join(''), status: 'incomplete', complete: false, finishReason: 'abort' });
    const b = aggregate<ChatCompletionChunk>({ store });
    await all(source(await openAiChunks(engineChunks('abort'))).stream.pipeThrough(b));
    expect(await store.get(b.id)).toMatchObject({ text: WORDS.join(''), status: 'incomplete', complete: false });
  });

  test('a source that fails: the reader gets its error, the record is failed with the text so far and the error', async () => {
    const store = fresh();
    const boom = new TypeError('connection reset');
    const src = source(engineChunks(), { index: 3, error: boom });
    const stream = aggregate<Chunk>({ store });
    const got: Chunk[] = [];
    const err = await (async () => {
      for await (const c of src.stream.pipeThrough(stream)) got.push(c);
    })().catch((e) => e);
    expect(err).toBe(boom);
    expect(got.length).toBe(3);
    expect(await store.get(stream.id)).toMatchObject({ text: textOf(got), status: 'failed', complete: false, error: { name: 'TypeError', message: 'connection reset' } });
  });

  test("a generate() stream that ends with an 'error' chunk (a lost GPU device) is stored failed, with that chunk's error", async () => {
    const store = fresh();
    const chunks = engineChunks('error');
    chunks[chunks.length - 1].error = Object.assign(new Error('The GPU device was lost (unknown: gone).'), { name: 'DeviceLostError' });
    const stream = aggregate<Chunk>({ store });
    const got = await all(source(chunks).stream.pipeThrough(stream));
    expect(got.length).toBe(chunks.length); // delivered whole: the error is the stream's end, not a failure of the store
    expect(await store.get(stream.id)).toMatchObject({ text: WORDS.join(''), status: 'failed', complete: false, error: { name: 'DeviceLostError', message: 'The GPU device was lost (unknown: gone).' } });
  });

  test('a record whose writer went away (a reload) reads incomplete; one still streaming elsewhere reads in_progress', async () => {
    const store = fresh();
    // What a page that was reloaded mid-answer leaves: an in_progress header and its pieces, and no lock.
    const db = await openDB(store.name, 1, {
      upgrade(d) {
        d.createObjectStore('responses', { keyPath: 'id' }).createIndex('byCreated', ['createdAt', 'id']);
        d.createObjectStore('pieces', { keyPath: ['id', 'index'] });
      },
    });
    await db.put('responses', { id: 'gone', createdAt: 1, updatedAt: 1, status: 'in_progress', finishReason: null });
    await db.put('pieces', { id: 'gone', index: 0, text: 'Once', at: 5 });
    await db.put('pieces', { id: 'gone', index: 1, text: ' upon', at: 6 });
    db.close();
    expect(await store.get('gone')).toMatchObject({ text: 'Once upon', textLength: 9, status: 'incomplete', complete: false, updatedAt: 6 });

    // A stream in progress, written through another Responses over the same database (another tab, as far as the
    // reader knows): its Web Lock says it is live.
    const writer = new Responses({ name: store.name });
    const stream = aggregate<string>({ store: writer });
    const reader = source(['Hel', 'lo', '!']).stream.pipeThrough(stream).getReader();
    await reader.read();
    expect(await store.get(stream.id)).toMatchObject({ text: 'Hel', status: 'in_progress', complete: false });
    expect((await store.list()).find((h) => h.id === stream.id)).toMatchObject({ status: 'in_progress', textLength: 3 });
    while (!(await reader.read()).done);
    expect(await store.get(stream.id)).toMatchObject({ text: 'Hello!', status: 'completed' });
    writer.close();
  });

  test('a reader that cancels before anything arrived: the record (request kept, no text) is incomplete, not left in progress', async () => {
    const store = fresh();
    const stream = aggregate<string>({ store, request: { prompt: 'Hi' } });
    await source(['never']).stream.pipeThrough(stream).cancel();
    expect(await store.get(stream.id)).toMatchObject({ text: '', textLength: 0, status: 'incomplete', request: { prompt: 'Hi' } });
  });

  test('backpressure: the source is pulled only as the reader reads (at most one chunk ahead)', async () => {
    const store = fresh();
    const src = source(engineChunks());
    const reader = src.stream.pipeThrough(aggregate<Chunk>({ store })).getReader();
    for (let n = 1; n <= 5; n++) {
      await reader.read();
      await new Promise((r) => setTimeout(r, 20));
      expect(src.seen.pulls).toBeLessThanOrEqual(n + 1);
    }
    await reader.cancel();
  });
});

describe('the responses store', () => {
  test('list: newest first, headers without text, limit, and pages with before', async () => {
    const store = fresh();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const s = aggregate<string>({ store, request: { n: i } });
      await all(source([`answer ${i}`]).stream.pipeThrough(s));
      ids.push(s.id);
    }
    const listed = await store.list();
    expect(listed.map((h) => h.id)).toEqual([...ids].reverse());
    expect(listed[0]).toMatchObject({ request: { n: 4 }, textLength: 'answer 4'.length, complete: true });
    expect(listed[0]).not.toHaveProperty('text');
    const page1 = await store.list({ limit: 2 });
    const page2 = await store.list({ limit: 2, before: page1.at(-1)!.id });
    const page3 = await store.list({ limit: 2, before: page2.at(-1)!.id });
    expect([...page1, ...page2, ...page3].map((h) => h.id)).toEqual([...ids].reverse());
    expect(await store.list({ limit: 0 })).toEqual([]);
  });

  test('delete removes the header and its text in one go; clear removes all', async () => {
    const store = fresh();
    const a = aggregate<string>({ store });
    const b = aggregate<string>({ store });
    await all(source(['x', 'y']).stream.pipeThrough(a));
    await all(source(['z']).stream.pipeThrough(b));
    expect(await store.delete(a.id)).toBe(true);
    expect(await store.delete(a.id)).toBe(false);
    expect(await store.get(a.id)).toBeUndefined();
    const db = await openDB(store.name);
    expect(await db.count('pieces', IDBKeyRange.bound([a.id, 0], [a.id, Infinity]))).toBe(0);
    expect(await db.count('pieces')).toBe(1);
    db.close();
    await store.clear();
    expect(await store.list()).toEqual([]);
  });

  test('a response deleted while it streams keeps streaming, and is not stored again', async () => {
    const store = fresh();
    const stream = aggregate<string>({ store });
    const reader = source(['a', 'b', 'c']).stream.pipeThrough(stream).getReader();
    expect((await reader.read()).value).toBe('a');
    await store.delete(stream.id);
    const rest: string[] = [];
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest.push(r.value);
    expect(rest).toEqual(['b', 'c']);
    expect(await store.get(stream.id)).toBeUndefined();
    const db = await openDB(store.name);
    expect(await db.count('pieces')).toBe(0);
    db.close();
  });
});

describe('errors', () => {
  test('bad input is a ResponseStoreError that says what to do', async () => {
    const store = fresh();
    for (const bad of [() => aggregate({ id: '' }), () => aggregate({ store: {} as Responses }), () => new Responses({ name: '' })]) {
      expect(bad).toThrow(ResponseStoreError);
    }
    await expect(store.get('')).rejects.toMatchObject({ name: 'ResponseStoreError', problem: 'invalid' });
    await expect(store.list({ limit: -1 })).rejects.toMatchObject({ problem: 'invalid' });
    await expect(store.list({ before: 'nope' })).rejects.toMatchObject({ problem: 'invalid', message: /previous page of list/ });
  });

  test('a taken id, a request that cannot be stored, a chunk of no known shape: the stream errors with it', async () => {
    const store = fresh();
    await all(source(['a']).stream.pipeThrough(aggregate<string>({ store, id: 'taken' })));
    const taken = source(['b']);
    const err = await all(taken.stream.pipeThrough(aggregate<string>({ store, id: 'taken' }))).catch((e) => e);
    expect(err).toBeInstanceOf(ResponseStoreError);
    expect(err).toMatchObject({ problem: 'exists', responseId: 'taken', message: /delete it first/ });
    expect(taken.seen.cancelled).toBe(true);
    expect(await store.get('taken')).toMatchObject({ text: 'a', complete: true });

    // Two streams at once with one id: the second errors, the first is untouched.
    const first = source(['1', '2']);
    const reader = first.stream.pipeThrough(aggregate<string>({ store, id: 'twice' })).getReader();
    await reader.read();
    const second = await all(source(['x']).stream.pipeThrough(aggregate<string>({ store, id: 'twice' }))).catch((e) => e);
    expect(second).toMatchObject({ name: 'ResponseStoreError', problem: 'exists' });
    while (!(await reader.read()).done);
    expect(await store.get('twice')).toMatchObject({ text: '12', status: 'completed' });

    const uncloneable = await all(source(['b']).stream.pipeThrough(aggregate<string>({ store, request: { f: () => 1 } }))).catch((e) => e);
    expect(uncloneable).toMatchObject({ name: 'ResponseStoreError', problem: 'invalid', message: /plain data/ });

    const shapeless = aggregate({ store });
    const bad = await all(source<unknown>(['ok', 42]).stream.pipeThrough(shapeless as unknown as ReadableWritablePair<unknown, unknown>)).catch((e) => e);
    expect(bad).toMatchObject({ name: 'ResponseStoreError', problem: 'invalid', message: /neither an engine Chunk/ });
    expect(await store.get(shapeless.id)).toMatchObject({ text: 'ok', status: 'failed', complete: false });
  });
});
