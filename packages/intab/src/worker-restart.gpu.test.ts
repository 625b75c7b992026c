// A worker that dies, in real Chromium: terminated from outside as the browser would kill it (no message, no error
// event), every pending call rejects with WorkerError within moments instead of hanging, and engine.restart() loads
// the model again in a new worker, whose next request gives the golden ids.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { sharedUrl } from '@intab/testing/gpu';
import { EngineClosedError, WorkerError, createEngine, type Chunk, type IntabEngine } from './index.ts';

const BASE = new URL(sharedUrl('models/stories260K/'), location.href).href;
let golden: { cases: { prompt: number[]; greedy: number[] }[] };
let engine: IntabEngine;

const workerOf = (e: IntabEngine) => (e as unknown as Record<symbol, Worker | undefined>)[Symbol.for('intab.worker')];

beforeAll(async () => {
  golden = await (await fetch(BASE + 'golden.json')).json();
  engine = await createEngine({ model: BASE + 'stories260K.gguf', cache: false, kvBudgetBytes: 4 << 20 });
});

afterAll(async () => {
  await engine?.destroy();
});

test('a terminated worker rejects every pending call with WorkerError; restart() brings the engine back', async () => {
  const first = workerOf(engine);
  expect(first).toBeInstanceOf(Worker);
  const g = golden.cases[0];
  const it = engine.generate({ promptIds: g.prompt, maxTokens: 400, temperature: 0, ignoreEos: true })[Symbol.asyncIterator]();
  const got = await it.next();
  expect(got.done).toBe(false);
  first!.terminate(); // as the browser kills a worker: nothing is sent
  const t0 = performance.now();
  let pending: unknown;
  try {
    for (let r = await it.next(); !r.done; r = await it.next());
  } catch (e) {
    pending = e;
  }
  expect(pending).toBeInstanceOf(WorkerError);
  expect((pending as Error).message).toMatch(/restart\(\)/);
  console.log(`[worker-restart] pending call rejected ${(performance.now() - t0).toFixed(0)} ms after terminate()`);
  await expect(engine.stats()).rejects.toBeInstanceOf(WorkerError);

  await engine.restart();
  expect(workerOf(engine)).not.toBe(first);
  const chunks: Chunk[] = [];
  for await (const c of engine.generate({ promptIds: g.prompt, maxTokens: g.greedy.length, temperature: 0, ignoreEos: true })) chunks.push(c);
  expect(chunks.flatMap((c) => c.ids)).toEqual(g.greedy);
  expect((await engine.stats()).streams).toBe(0);
});

test('restart() on a destroyed engine is EngineClosedError', async () => {
  const other = await createEngine({ model: BASE + 'stories260K.gguf', cache: false, kvBudgetBytes: 4 << 20 });
  await other.destroy();
  await expect(other.restart()).rejects.toBeInstanceOf(EngineClosedError);
});
