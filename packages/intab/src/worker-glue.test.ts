// The worker glue without a browser: a real Engine (CPU reference runner) exposed through Comlink on one end
// of a MessageChannel, exactly as worker.ts does, and the main-thread IntabEngine on the other end. Checks
// that errors cross with their class, name and fields, an AbortSignal crosses (its reason kept) and ends the
// stream with 'abort', `break` cancels remotely, and released signals close their ports.
import { afterEach, beforeEach, describe, expect, test } from 'vitest';

import * as Comlink from 'comlink';
import type { EngineApi } from '@intab/engine/contract';
import { ContextLengthExceededError, InvalidRequestError, UnknownStreamError } from '@intab/engine/errors';
import { registerTransferHandlers, releaseSignal } from '@intab/engine/transfer';
import type { Engine } from '@intab/engine';
import type { ReferenceRunner } from '@intab/engine/reference';
import { wrapEngineApi, type IntabEngine } from './engine.ts';
import { referenceEngine } from './test-fixture.ts';

const messages = [{ role: 'user', content: 'Hello' }];

let engine: IntabEngine;
let remote: EngineApi;
let inner: Engine;
let runner: ReferenceRunner;
let channel: MessageChannel;

beforeEach(() => {
  registerTransferHandlers();
  const r = referenceEngine();
  inner = r.engine;
  runner = r.runner;
  channel = new MessageChannel();
  Comlink.expose(r.engine, channel.port1);
  remote = Comlink.wrap<EngineApi>(channel.port2) as unknown as EngineApi;
  engine = wrapEngineApi(remote, r.info, { name: 'remote', inWorker: true });
});

afterEach(() => {
  channel.port1.close();
  channel.port2.close();
});

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

describe('across the port', () => {
  test('greedy ids equal the in-thread engine\'s', async () => {
    const request = { messages, maxTokens: 12, temperature: 0 };
    const across = (await collect(engine.generate(request))).flatMap((c) => c.ids);
    const local = (await collect(wrapEngineApi(referenceEngine().engine, { ...referenceEngine().info }).generate(request))).flatMap((c) => c.ids);
    expect(across).toEqual(local);
    expect(across.length).toBe(12);
  });

  test('errors keep their class, name, message and fields', async () => {
    const tooLarge = await collect(engine.generate({ messages, maxTokens: 10_000, strictContext: true })).catch((e) => e);
    expect(tooLarge).toBeInstanceOf(ContextLengthExceededError);
    expect(tooLarge.name).toBe('ContextLengthExceededError');
    expect(tooLarge).toMatchObject({ reason: 'max-tokens', limitedBy: 'context', limit: 256, maxTokens: 10_000, truncatedMessages: 0 });
    expect(tooLarge.promptTokens).toBeGreaterThan(0);
    expect(tooLarge.message).toContain(`lower maxTokens to ${256 - tooLarge.promptTokens} or less, shorten the prompt`);

    const invalid = await collect(engine.generate({ messages, temperature: -1 })).catch((e) => e);
    expect(invalid).toBeInstanceOf(InvalidRequestError);
    expect([invalid.name, invalid.field]).toEqual(['InvalidRequestError', 'temperature']);

    const unknown = await remote.next(999).catch((e) => e);
    expect(unknown).toBeInstanceOf(UnknownStreamError);
    expect(unknown.stream).toBe(999);
  });

  test("aborting the signal crosses the port and ends the stream with 'abort', pages freed", async () => {
    const controller = new AbortController();
    const chunks = [];
    for await (const c of engine.generate({ messages, maxTokens: 150, temperature: 0 }, { signal: controller.signal })) {
      chunks.push(c);
      if (chunks.length === 2) controller.abort();
    }
    expect(chunks.at(-1)!.finishReason).toBe('abort');
    expect(chunks.slice(0, -1).every((c) => c.finishReason === null)).toBe(true);
    expect(chunks.flatMap((c) => c.ids).length).toBeLessThan(150);
    expect(inner.stats()).toMatchObject({ streams: 0, running: 0, availablePages: runner.kv.pages });
  });

  test('the abort reason reaches the other side', async () => {
    let seen: unknown;
    const probe = {
      check: (signal: AbortSignal) =>
        new Promise<boolean>((resolve) => {
          if (signal.aborted) return resolve(((seen = signal.reason), true));
          signal.addEventListener('abort', () => resolve(((seen = signal.reason), false)), { once: true });
        }),
    };
    const ch = new MessageChannel();
    Comlink.expose(probe, ch.port1);
    const p = Comlink.wrap<typeof probe>(ch.port2);
    const controller = new AbortController();
    const done = p.check(controller.signal);
    controller.abort(new ContextLengthExceededError({ promptTokens: 1, maxTokens: 2, limit: 3, limitedBy: 'kv-cache', reason: 'max-tokens' }));
    expect(await done).toBe(false); // aborted after it crossed
    expect(seen).toBeInstanceOf(ContextLengthExceededError);
    expect((seen as ContextLengthExceededError).limitedBy).toBe('kv-cache');

    const c2 = new AbortController();
    const done2 = p.check(c2.signal);
    c2.abort();
    await done2;
    expect((seen as DOMException).name).toBe('AbortError');

    // Already aborted when sent: it arrives aborted, with its reason.
    expect(await p.check(AbortSignal.abort('plain reason'))).toBe(true);
    expect(seen).toBe('plain reason');
    ch.port1.close();
    ch.port2.close();
  });

  test('a released signal no longer aborts the other side', async () => {
    let aborted = false;
    let got: AbortSignal | undefined;
    const probe = { keep: (signal: AbortSignal) => void ((got = signal), signal.addEventListener('abort', () => (aborted = true))) };
    const ch = new MessageChannel();
    Comlink.expose(probe, ch.port1);
    const p = Comlink.wrap<typeof probe>(ch.port2);
    const controller = new AbortController();
    await p.keep(controller.signal);
    releaseSignal(controller.signal);
    controller.abort();
    // A round trip through the same channel: the release message (sent earlier) has been handled by now.
    await p.keep(AbortSignal.abort());
    expect(got!.aborted).toBe(true); // an aborted signal arrives aborted
    expect(aborted).toBe(false);
    ch.port1.close();
    ch.port2.close();
  });

  test('break cancels the remote stream and frees its pages; the next request works', async () => {
    let n = 0;
    for await (const c of engine.generate({ messages, maxTokens: 150, temperature: 0 })) {
      expect(c.finishReason).toBeNull();
      if (++n === 3) break;
    }
    expect(inner.stats()).toMatchObject({ streams: 0, running: 0, availablePages: runner.kv.pages });
    const next = await collect(engine.generate({ messages, maxTokens: 4, temperature: 0 }));
    expect(next.at(-1)!.finishReason).toBe('length');
  });

  test('chat completion shapes across the port', async () => {
    const res = await engine.chat.completions.create({ messages, max_tokens: 5, temperature: 0 });
    expect(res.object).toBe('chat.completion');
    expect(res.model).toBe('remote');
    expect(res.choices[0].finish_reason).toBe('length');
    expect(res.usage.completion_tokens).toBe(5);
  });

  test('destroy() frees the remote engine; pending and later calls reject with EngineClosedError', async () => {
    const it = engine.generate({ messages, maxTokens: 150, temperature: 0 })[Symbol.asyncIterator]();
    await it.next();
    await engine.destroy();
    expect(runner.kv.availablePageCount).toBe(runner.kv.pages);
    expect(runner.kv.sequences).toBe(0);
    await expect(collect(engine.generate({ messages }))).rejects.toMatchObject({ name: 'EngineClosedError', reason: 'destroyed' });
  });

  test('preload, release, stats and saveCache cross the port', async () => {
    const system = { role: 'system', content: 'You answer in one short line, and you never use more words than you must.' };
    const pinned = await engine.preload({ messages: [system] });
    expect(pinned.tokens).toBeGreaterThan(16);
    expect(pinned.cachedTokens).toBe(0);
    const stats = await engine.stats();
    expect(stats.prefixCache).toMatchObject({ pinnedPages: Math.ceil(pinned.tokens / 16) });
    const chunks = await collect(engine.generate({ messages: [system, ...messages], maxTokens: 3, temperature: 0 }));
    expect(chunks.at(-1)!.metrics!.cachedTokens).toBe(pinned.tokens);
    await pinned.release();
    await pinned.release();
    expect((await engine.stats()).prefixCache!.pinnedPages).toBe(0);
    // A signal aborts a preload across the port; a typed error comes back for what this context cannot do.
    const controller = new AbortController();
    const aborted = engine.preload({ prompt: 'x'.repeat(120) }, { signal: controller.signal });
    controller.abort(new Error('enough'));
    await expect(aborted).rejects.toThrow('enough');
    const noDisk = await engine.saveCache().catch((e) => e);
    expect(noDisk.name).toBe('EngineStateError');
    expect(noDisk.message).toMatch(/Origin Private File System/);
    expect(inner.stats()).toMatchObject({ streams: 0, running: 0, availablePages: runner.kv.pages });
  });
});
