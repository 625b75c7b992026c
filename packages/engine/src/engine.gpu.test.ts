// The Engine over the real GPU Runner (headless Chromium, WebGPU): stories260K's greedy ids through the
// scheduler equal golden.json and each request run alone, with four requests sharing steps (chunked prefill
// beside decodes); an abort mid-decode returns every page to the pool; Engine.load opens a model from a
// Blob (the 'files' source) and from a URL, with its tokenizer.
import { afterAll, describe, expect, test } from 'vitest';
import { requestGpu, type Gpu } from '@intab/gpu';
import { fetchShared, sharedUrl } from '@intab/testing/gpu';
import { Runner, bytesSource, openGguf } from '@intab/model';
import type { GenerateRequest } from './contract.ts';
import { Engine } from './engine.ts';
import { collect } from './test-streams.ts';

const BASE = sharedUrl('models/stories260K/');

interface Golden {
  cases: { prompt: number[]; greedy: number[] }[];
}

const fetchBytes = (name: string) => fetchShared(`models/stories260K/${name}`);

let gpu: Gpu | undefined;
afterAll(() => gpu?.destroy());

async function engineOverRunner(options: { maxTokensPerStep?: number; maxBatch?: number; prefixCache?: boolean } = {}) {
  gpu ??= await requestGpu();
  const model = await openGguf(bytesSource('stories260K.gguf', await fetchBytes('stories260K.gguf')));
  const runner = await Runner.load(gpu, model.config, model.tensors, { kvBudgetBytes: 4 << 20, maxBatch: 8 });
  return { runner, engine: new Engine({ runner, options: { seed: 1, ...options } }) };
}

describe('Engine over the GPU Runner (stories260K)', () => {
  test('4 concurrent greedy requests equal golden.json and each alone', async () => {
    const golden: Golden = JSON.parse(new TextDecoder().decode(await fetchBytes('golden.json')));
    // Without the prefix cache: the batch below must prefill beside decodes (cached prompts would skip it).
    const { engine, runner } = await engineOverRunner({ maxTokensPerStep: 16, maxBatch: 4, prefixCache: false });
    const free = runner.kv.availablePageCount;
    const long = [1, ...golden.cases[1].prompt.slice(1), ...golden.cases[1].greedy.slice(0, 24)]; // 29 tokens: two prefill chunks
    const requests: GenerateRequest[] = [
      { promptIds: golden.cases[0].prompt, maxTokens: golden.cases[0].greedy.length },
      { promptIds: golden.cases[1].prompt, maxTokens: golden.cases[1].greedy.length },
      { promptIds: long, maxTokens: 20 },
      { promptIds: [1, 300, 301, 302, 303, 304], maxTokens: 24 },
    ].map((r) => ({ ...r, temperature: 0, ignoreEos: true }));
    const alone: number[][] = [];
    for (const r of requests) alone.push((await collect(engine, await engine.start(r))).ids);
    expect(alone[0]).toEqual(golden.cases[0].greedy);
    expect(alone[1]).toEqual(golden.cases[1].greedy);
    // Together: the first two start at once, the others join while those decode. The step log shows the sharing.
    const log: number[][] = [];
    const step = runner.step.bind(runner);
    runner.step = (entries, o) => (log.push(entries.map((e) => e.tokens.length)), step(entries, o));
    const a = collect(engine, await engine.start(requests[0]));
    const b = collect(engine, await engine.start(requests[1]));
    const c = engine.start(requests[2]).then((id) => collect(engine, id));
    const d = engine.start(requests[3]).then((id) => collect(engine, id));
    const out = await Promise.all([a, b, c, d]);
    out.forEach((o, i) => expect(o.ids, `request ${i}`).toEqual(alone[i]));
    expect(out.map((o) => o.last.finishReason)).toEqual(['length', 'length', 'length', 'length']);
    expect(log.some((s) => s.length === 4)).toBe(true);
    expect(log.some((s) => s.includes(1) && s.some((t) => t > 1))).toBe(true); // a prefill chunk beside decodes
    expect(log.every((s) => s.reduce((a, t) => a + t, 0) <= 16)).toBe(true);
    expect(runner.kv.availablePageCount).toBe(free);
    await engine.destroy();
  });

  test('an abort mid-decode frees the pages before the stream ends; the next request is correct', async () => {
    const golden: Golden = JSON.parse(new TextDecoder().decode(await fetchBytes('golden.json')));
    const { engine, runner } = await engineOverRunner();
    const free = runner.kv.availablePageCount;
    const controller = new AbortController();
    const id = await engine.start({ promptIds: golden.cases[0].prompt, maxTokens: 64, temperature: 0, ignoreEos: true }, controller.signal);
    const r = await collect(engine, id, (_c, ids) => {
      if (ids.length >= 4) controller.abort();
    });
    expect(r.last.finishReason).toBe('abort');
    expect(r.ids.length).toBeLessThan(64);
    expect(r.ids).toEqual(golden.cases[0].greedy.slice(0, r.ids.length));
    expect(runner.kv.has(id)).toBe(false);
    expect(runner.kv.availablePageCount).toBe(free);
    const next = await collect(engine, await engine.start({ promptIds: golden.cases[1].prompt, maxTokens: 48, temperature: 0, ignoreEos: true }));
    expect(next.ids).toEqual(golden.cases[1].greedy);
    await engine.destroy();
  });

  test('Engine.load opens a GGUF from a Blob and from a URL, with its tokenizer', async () => {
    const golden: Golden = JSON.parse(new TextDecoder().decode(await fetchBytes('golden.json')));
    const bytes = await fetchBytes('stories260K-vocab-ud.gguf');
    const progress: number[] = [];
    const fromBlob = await Engine.load(
      { kind: 'files', files: [{ name: 'stories260K-vocab-ud.gguf', blob: new Blob([bytes as BlobPart]) }] },
      { kvBudgetBytes: 1 << 20 },
      (p) => progress.push(p.loaded / p.total),
    );
    expect(fromBlob.modelInfo).toMatchObject({ arch: 'llama', layers: 5, hidden: 64, vocab: 512, contextLength: 512, hasTokenizer: true, hasChatTemplate: false });
    expect(progress.at(-1)).toBe(1);
    const r = await collect(fromBlob, await fromBlob.start({ prompt: '<t403><t261><t310><t263>', maxTokens: 8, temperature: 0, ignoreEos: true }));
    expect(r.ids).toEqual(golden.cases[1].greedy.slice(0, 8));
    expect(r.text).toBe(r.ids.map((i) => `<t${i}>`).join(''));
    await fromBlob.destroy();

    const fromUrl = await Engine.load({ kind: 'url', url: new URL(BASE + 'stories260K-vocab-ud.gguf', location.href).href }, { kvBudgetBytes: 1 << 20 });
    const u = await collect(fromUrl, await fromUrl.start({ promptIds: golden.cases[1].prompt, maxTokens: 8, temperature: 0, ignoreEos: true }));
    expect(u.ids).toEqual(golden.cases[1].greedy.slice(0, 8));
    await fromUrl.destroy();
  });
});

test('1000 abort cycles on the GPU leak no buffer and no page; the next request is correct', async () => {
  gpu ??= await requestGpu();
  const device = gpu.device;
  // Count live GPU buffers from here on: every createBuffer minus every destroy.
  const live = new Set<GPUBuffer>();
  const create = device.createBuffer.bind(device);
  device.createBuffer = (d: GPUBufferDescriptor) => {
    const b = create(d);
    live.add(b);
    const destroy = b.destroy.bind(b);
    b.destroy = () => {
      live.delete(b);
      destroy();
    };
    return b;
  };
  try {
    const golden: Golden = JSON.parse(new TextDecoder().decode(await fetchBytes('golden.json')));
    const { engine, runner } = await engineOverRunner({ maxTokensPerStep: 4 });
    const pages = runner.kv.availablePageCount;
    // One request to completion first, so the buffers made on first use (sampler and acceptance inputs, readback staging) exist
    // at their steady size before the baseline.
    const warm = await engine.start({ promptIds: golden.cases[1].prompt, maxTokens: 8, temperature: 0, ignoreEos: true });
    await collect(engine, warm);
    const baseline = live.size;
    const reasons: Record<string, number> = {};
    for (let i = 0; i < 1000; i++) {
      const controller = new AbortController();
      const kind = i % 4;
      if (kind === 0) controller.abort(); // aborted before it starts
      const id = await engine.start({ promptIds: [1, 300 + (i % 50), 301, 302, 303, 304, 305], maxTokens: 6, seed: i, temperature: 0.8 }, controller.signal);
      if (kind === 3) {
        await engine.next(id); // first token out, then break out of the loop
        await engine.cancel(id);
        reasons.cancel = (reasons.cancel ?? 0) + 1;
        continue;
      }
      if (kind === 2) await engine.next(id); // mid-decode
      controller.abort(); // kind 1: while queued or prefilling (chunks of 4)
      const { last } = await collect(engine, id);
      reasons[last.finishReason!] = (reasons[last.finishReason!] ?? 0) + 1;
    }
    expect(reasons.abort).toBeGreaterThanOrEqual(700); // a few may finish (6 tokens) before their abort lands
    expect(reasons.cancel).toBe(250);
    expect(runner.kv.availablePageCount).toBe(pages);
    expect(live.size).toBe(baseline);
    const next = await engine.start({ promptIds: golden.cases[1].prompt, maxTokens: golden.cases[1].greedy.length, temperature: 0, ignoreEos: true });
    expect((await collect(engine, next)).ids).toEqual(golden.cases[1].greedy);
    await engine.destroy();
  } finally {
    device.createBuffer = create;
  }
});
