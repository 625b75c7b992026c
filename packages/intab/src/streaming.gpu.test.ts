// Chunks as a chat user expects them, across a real module Worker: a consumer that keeps up gets one chunk per step
// (one token each), one that falls behind gets what queued meanwhile as one chunk, and an abort ends the stream within
// one step. The worker's runner blocks its thread for each step, as onnxruntime's wasm does (test-blocking-worker.ts):
// before the engine let messages in between steps, such a backend delivered eight tokens per chunk and heard an abort
// only once the queue was full. Asserted on the runner's step log and the chunks' ids, never on time.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as Comlink from 'comlink';
import type { Chunk, EngineApi } from '@intab/engine/contract';
import { registerTransferHandlers } from '@intab/engine/transfer';
import { wrapEngineApi, type IntabEngine } from './engine.ts';
import type { StreamingCheckApi } from './test-blocking-worker.ts';

let worker: Worker;
let api: Comlink.Remote<EngineApi & StreamingCheckApi>;
let engine: IntabEngine;

beforeAll(async () => {
  registerTransferHandlers();
  worker = new Worker(new URL('./test-blocking-worker.ts', import.meta.url), { type: 'module' });
  api = Comlink.wrap<EngineApi & StreamingCheckApi>(worker);
  engine = wrapEngineApi(api as unknown as EngineApi, await api.workerInfo(), { inWorker: true });
});

afterAll(() => worker?.terminate());

const request = (maxTokens: number) => ({ promptIds: [1, 2, 3], maxTokens, temperature: 0, ignoreEos: true });

/** The steps that ran for the stream whose prompt step is the first after `from` (its prefill, then one per token). */
async function stepsSince(from: number): Promise<number> {
  const log = (await api.stepLog()).slice(from);
  const seq = log[0][0].seq;
  return log.filter((step) => step.some((e) => e.seq === seq)).length;
}

describe('streaming through a worker whose steps block', () => {
  test('a consumer that keeps up gets one chunk per step, one token each', async () => {
    const from = (await api.stepLog()).length;
    const chunks: Chunk[] = [];
    for await (const c of engine.generate(request(12))) chunks.push(c);
    expect(chunks.map((c) => c.ids.length)).toEqual(Array(12).fill(1));
    expect(chunks.at(-1)!.finishReason).toBe('length');
    expect(await stepsSince(from)).toBe(chunks.length);
  });

  test('a consumer that falls behind gets what was produced meanwhile as one chunk', async () => {
    const from = (await api.stepLog()).length;
    const sizes: number[] = [];
    for await (const c of engine.generate(request(12))) {
      sizes.push(c.ids.length);
      if (sizes.length !== 1) continue;
      // Falls behind: pulls again only once three more steps have run.
      const seen = (await api.stepLog()).length;
      while ((await api.stepLog()).length < seen + 3) await new Promise((r) => setTimeout(r, 5));
    }
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(12);
    expect(sizes[0]).toBe(1);
    expect(sizes[1]).toBeGreaterThanOrEqual(2);
    expect(sizes.length).toBeLessThan(12);
    expect(await stepsSince(from)).toBe(12);
  });

  test('an abort ends the stream within one step and frees its pages', async () => {
    const from = (await api.stepLog()).length;
    const controller = new AbortController();
    const chunks: Chunk[] = [];
    let logAtAbort = 0;
    for await (const c of engine.generate(request(200), { signal: controller.signal })) {
      chunks.push(c);
      if (chunks.length !== 5) continue;
      controller.abort();
      // A call sent after the abort is read between two steps, as the abort is: the steps logged by then bound
      // what the stream can still get, whatever the page's own delays (a busy machine may keep it from reacting
      // for several of the worker's steps, which go on meanwhile while the queue has room).
      logAtAbort = (await api.stepLog()).length;
    }
    const ids = chunks.flatMap((c) => c.ids);
    expect(chunks.at(-1)!.finishReason).toBe('abort');
    expect(ids.length).toBeGreaterThanOrEqual(5);
    // Every step of the stream gave it one token, and none of them went undelivered.
    const steps = await stepsSince(from);
    expect(ids.length).toBe(steps);
    // At most the step that ran while the abort was on its way (if the worker read it a step after the call).
    const log = await api.stepLog();
    const seq = log[from][0].seq;
    expect(log.slice(logAtAbort).filter((step) => step.some((e) => e.seq === seq)).length).toBeLessThanOrEqual(1);
    const stats = await engine.stats();
    expect(stats.streams).toBe(0);
    expect(stats.availablePages).toBe(stats.totalPages); // free, or cached by the prefix cache and evictable
  });
});
