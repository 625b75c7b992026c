// The prefix cache through the engine on the ONNX runner (onnxruntime-web's wasm EP, stories260K's real weights in a
// graph written from its GGUF). There K/V live in per-sequence ORT tensors, not in pages: a page the cache retains is
// kept with its K/V, and a sequence adopting cached pages starts from them put together. A wrong offset or a stale page
// changes the ids, so: the greedy ids with the cache on equal the ids with it off (a chat turn after turn; requests mapping a running request's prompt pages; ngram and draft speculation over cached pages; eviction under a
// tiny KV budget; a preloaded prefix), later turns prefill only what is new, and random starts, aborts, preloads and
// releases end with every page back and nothing kept for a page the cache no longer holds. (Greedy, not sampled: ORT's
// kernels round differently by the number of tokens a call feeds, so a cached prefix gives the same logits only to
// rounding, as the runner's own test measures, and a sampled token at a near-tie may differ. The engine's side of the
// cache is checked exactly, sampling too, on the reference runner in prefix-cache.engine.test.ts.)
import { beforeAll, describe, expect, test } from 'vitest';
import type { LlamaConfig } from '@intab/model';
import { buildLlamaGraph, createSession, graphLayout, OnnxRunner } from '@intab/onnx';
import type { GenerateRequest, SpeculativeMethod } from './contract.ts';
import { Engine, type EngineOptions } from './engine.ts';
import { stories260K } from './test-models.ts';
import { collect, prefixTraffic, runRequest as run, storyWords as words, type Collected } from './test-streams.ts';

let config: LlamaConfig;
let tensors: Map<string, Float32Array>;
let golden: { cases: { prompt: number[]; greedy: number[] }[] };
let graphs: Map<number, Uint8Array>;

beforeAll(async () => {
  ({ config, tensors, golden } = stories260K());
  graphs = new Map();
  for (const layers of [config.layers, 2]) graphs.set(layers, (await buildLlamaGraph({ ...config, layers }, (n) => tensors.get(n))).model);
});

/** One page of stories260K's K/V: K and V, f32, per layer. */
const pageBytes = (layers: number) => 2 * layers * config.kvHeads * config.headDim * 4 * 16;

async function runnerOf(layers: number, pages: number): Promise<OnnxRunner> {
  const onnx = await createSession(graphs.get(layers)!, { backend: 'onnx-wasm' });
  const c = { ...config, layers };
  return new OnnxRunner(onnx, graphLayout(onnx.session, c, 'stories260K.onnx'), { ...c, eosIds: [] }, { kvBudgetBytes: pages * pageBytes(layers), maxBatch: 8, pageSize: 16 });
}

async function setup(o: { pages?: number; engine?: EngineOptions; draft?: boolean } = {}) {
  const runner = await runnerOf(config.layers, o.pages ?? 64);
  const draft = o.draft ? await runnerOf(2, 64) : undefined;
  const engine = new Engine({ runner, draft, options: { seed: 3, maxBatch: 8, ...o.engine } });
  return { runner, engine };
}

/** At rest, the runner keeps K/V for exactly the pages the cache holds. */
function expectKeptAsHeld(runner: OnnxRunner, engine: Engine) {
  expect(runner.keptPages).toEqual([...engine.prefixCache!.heldPages().keys()].sort((a, b) => a - b));
}

describe('prefix cache on the ONNX runner: the same ids, less prefill', () => {
  test('a 5-turn chat gives the same ids with the cache on and off; later turns prefill only the new tokens', async () => {
    const options = { maxTokens: 14, temperature: 0, ignoreEos: true };
    const off = await setup({ engine: { prefixCache: false } });
    const on = await setup();
    const chat = async (engine: Engine) => {
      const out: Collected[] = [];
      let prompt = [1, ...words(100, 37)];
      for (let t = 0; t < 5; t++) {
        prompt = [...prompt, ...words(200 + t, 9 + 3 * t)];
        const r = await run(engine, { ...options, promptIds: prompt });
        out.push(r);
        prompt = [...prompt, ...r.ids];
      }
      return out;
    };
    const a = await chat(off.engine);
    const b = await chat(on.engine);
    expect(b.map((r) => r.ids)).toEqual(a.map((r) => r.ids));
    const m = b.map((r) => r.last.metrics!);
    expect(m[0].cachedTokens).toBe(0);
    for (let t = 1; t < 5; t++) expect(m[t].cachedTokens, `turn ${t}`).toBe(m[t - 1].promptTokens + m[t - 1].completionTokens - 1);
    expect(on.engine.stats().availablePages).toBe(on.engine.stats().totalPages);
    expectKeptAsHeld(on.runner, on.engine);
    await Promise.all([off.engine.destroy(), on.engine.destroy()]);
  });

  test('requests started while another runs map its prompt pages, with the ids they have alone', async () => {
    const off = await setup({ engine: { prefixCache: false } });
    const fresh = [1, ...words(8, 60)];
    const requests = [0, 1, 2].map((i): GenerateRequest => ({ promptIds: [...fresh, ...words(400 + i, 2)], maxTokens: 6, temperature: 0, ignoreEos: true }));
    const expected: number[][] = [];
    for (const r of requests) expected.push((await run(off.engine, r)).ids);
    const { engine, runner } = await setup({ engine: { maxTokensPerStep: 32 } });
    const later: number[] = [];
    const first = await collect(engine, await engine.start(requests[0]), async (_c, ids) => {
      if (ids.length === 1) later.push(...(await Promise.all(requests.slice(1).map((r) => engine.start(r)))));
    });
    const laterOut = await Promise.all(later.map((id) => collect(engine, id)));
    expect([first, ...laterOut].map((r) => r.ids)).toEqual(expected);
    for (const r of laterOut) expect(r.last.metrics!.cachedTokens).toBe(48);
    expectKeptAsHeld(runner, engine);
    await Promise.all([off.engine.destroy(), engine.destroy()]);
  });

  for (const method of ['ngram', 'draft'] as SpeculativeMethod[]) {
    test(`speculative (${method}) over cached pages: golden ids, and plain decoding's ids on a cached prompt`, async () => {
      const { engine, runner } = await setup({ draft: method === 'draft' });
      const speculative = { method, k: 4, adaptive: false };
      const c = golden.cases[1];
      for (let i = 0; i < 2; i++) {
        const r = await run(engine, { promptIds: c.prompt, maxTokens: c.greedy.length, temperature: 0, ignoreEos: true, speculative });
        expect(r.ids, `run ${i}`).toEqual(c.greedy);
      }
      const grounded = [...c.prompt, ...c.greedy.slice(0, 20), ...c.prompt.slice(1)];
      const plain = await run((await setup({ engine: { prefixCache: false } })).engine, { promptIds: grounded, maxTokens: 24, temperature: 0, ignoreEos: true });
      const spec = await run(engine, { promptIds: grounded, maxTokens: 24, temperature: 0, ignoreEos: true, speculative });
      expect(spec.last.metrics!.cachedTokens).toBeGreaterThanOrEqual(c.prompt.length + 20);
      expect(spec.last.metrics!.speculative!.verifySteps).toBeGreaterThan(0);
      expect(spec.ids).toEqual(plain.ids);
      expect(engine.stats().availablePages).toBe(runner.kv.pages);
      await engine.destroy();
    });
  }

  test('under a tiny KV budget every request runs with the ids it has without the cache, and evicted pages are forgotten', async () => {
    const requests = Array.from({ length: 12 }, (_, i): GenerateRequest => ({ promptIds: [1, ...words(500 + (i % 5), 20 + (i % 3) * 7)], maxTokens: 30 + (i % 4) * 5, temperature: 0, ignoreEos: true }));
    const off = await setup({ pages: 10, engine: { prefixCache: false } });
    const on = await setup({ pages: 10 });
    const a = await Promise.all(requests.map((r) => run(off.engine, r)));
    const b = await Promise.all(requests.map((r) => run(on.engine, r)));
    expect(b.map((r) => r.ids)).toEqual(a.map((r) => r.ids));
    const s = on.engine.stats().prefixCache!;
    expect(s.evictions).toBeGreaterThan(5);
    expect(s.hitTokens).toBeGreaterThan(0);
    expectKeptAsHeld(on.runner, on.engine);
    await Promise.all([off.engine.destroy(), on.engine.destroy()]);
  });

  test('a preloaded prefix (two pages and part of one) is a hit for the requests that start with it', async () => {
    const { engine, runner } = await setup({ pages: 12 });
    const system = [1, ...words(9, 40)];
    const p = await engine.preload({ promptIds: system });
    expect(p).toMatchObject({ tokens: 41, cachedTokens: 0 });
    for (const tail of [5, 9]) {
      const request = { promptIds: [...system, ...words(10 + tail, tail)], maxTokens: 12, temperature: 0, ignoreEos: true };
      const r = await run(engine, request);
      expect(r.last.metrics!.cachedTokens).toBe(41);
      expect(r.ids).toEqual((await run((await setup({ engine: { prefixCache: false } })).engine, request)).ids);
    }
    await engine.release(p.id);
    expectKeptAsHeld(runner, engine);
    await engine.destroy();
  });
});

describe('random traffic on the ONNX runner', () => {
  test('150 seeded starts, aborts, preloads and releases: ids equal the cache-off ids, every page comes back', { timeout: 120_000 }, async () => {
    const stems = [[1, ...words(21, 50)], [1, ...words(22, 30)], [1, ...words(21, 20), ...words(23, 30)]];
    const requests: GenerateRequest[] = Array.from({ length: 12 }, (_, i) => {
      const stem = stems[i % 3];
      return { promptIds: [...stem.slice(0, 10 + ((i * 7) % (stem.length - 10))), ...words(600 + i, 1 + (i % 4))], maxTokens: 6 + (i % 5) * 3, temperature: 0, ignoreEos: true };
    });
    const off = await setup({ engine: { prefixCache: false } });
    const expected: number[][] = [];
    for (const r of requests) expected.push((await run(off.engine, r)).ids);
    await off.engine.destroy();

    const { engine, runner } = await setup({ pages: 24, engine: { maxBatch: 4, maxTokensPerStep: 24 } });
    const finished = await prefixTraffic(engine, { seed: 78, ops: 150, stems, requests, expected, methods: [false, false, 'ngram'] });
    expect(finished).toBeGreaterThan(50);
    const s = engine.stats();
    expect(s).toMatchObject({ streams: 0, running: 0, waiting: 0, availablePages: 24, prefixCache: { pinnedPages: 0 } });
    expect(s.prefixCache!.hitTokens).toBeGreaterThan(s.prefixCache!.missTokens);
    runner.kv.audit(engine.prefixCache!.heldPages());
    expectKeptAsHeld(runner, engine);
    await engine.destroy();
  });
});
