// LoadOptions.kvBudgetBytes far beyond what the adapter allows (headless Chromium, SwiftShader, stories260K): the
// KV-cache is clamped to the adapter's largest storage binding (each layer's K and V is one buffer bound whole) instead
// of failing, ModelInfo says so (kvBudget, and a warning), and the model still gives its golden greedy ids, also from
// a page at the far end of the clamped cache. A budget within the limits is granted as whole pages, with no warning.
//
// The device is SwiftShader's, asked for WebGPU's default limits (128 MiB per storage binding, 256 MiB per buffer, what
// many mobile adapters offer): with SwiftShader's own 1 GiB, the clamp gives stories260K a 10 GiB cache, whose first
// buffer SwiftShader's driver refuses (that refusal is @intab/model's gpu-memory.gpu.test.ts). Here the clamped cache
// is 1.25 GiB of host memory.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { requestGpu, type Gpu } from '@intab/gpu';
import { fetchShared } from '@intab/testing/gpu';
import { bytesSource, openGguf, openTokenizer, type ModelFiles, type Runner } from '@intab/model';
import { loadModel } from './load.ts';

interface Golden {
  cases: { prompt: number[]; greedy: number[] }[];
}

/** navigator.gpu, whose adapters keep their limits to themselves: requestGpu asks for none, so the device has the defaults. */
const defaultLimitsGpu = {
  async requestAdapter(options?: GPURequestAdapterOptions): Promise<GPUAdapter | null> {
    const adapter = await navigator.gpu.requestAdapter(options);
    if (!adapter) return null;
    return new Proxy(adapter, {
      get(target, key) {
        if (key === 'limits') return {};
        const value: unknown = Reflect.get(target, key, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  },
} as unknown as GPU;

let gpu: Gpu;
let model: ModelFiles;
let golden: Golden;
beforeAll(async () => {
  gpu = await requestGpu({ gpu: defaultLimitsGpu });
  model = await openGguf(bytesSource('stories260K.gguf', await fetchShared('models/stories260K/stories260K.gguf')));
  golden = JSON.parse(new TextDecoder().decode(await fetchShared('models/stories260K/golden.json')));
});
afterAll(() => gpu?.destroy());

/** The greedy continuation of `prompt` in a new sequence, freed afterwards. */
async function greedy(runner: Runner, prompt: number[], length: number, seq: number): Promise<number[]> {
  runner.alloc(seq);
  try {
    const ids = [(await runner.step([{ seq, tokens: prompt }]))[0].id];
    while (ids.length < length) ids.push((await runner.step([{ seq, tokens: [ids[ids.length - 1]] }]))[0].id);
    return ids;
  } finally {
    runner.free(seq);
  }
}

describe('the KV budget, clamped to the adapter', () => {
  test('a budget far beyond the limits loads with the most pages a binding holds, says so, and gives the golden ids', async () => {
    expect(gpu.limits.maxStorageBufferBindingSize).toBe(128 << 20);
    expect(gpu.limits.maxBufferSize).toBe(256 << 20);
    const c = model.config;
    const pageBytes = 16 * c.kvHeads * c.headDim * 4; // one page of one layer's K
    const pages = (128 << 20) / pageBytes;
    const asked = 2 ** 40;
    const { runner, info } = await loadModel(gpu, { model: model, tokenizer: openTokenizer(model) }, { kvBudgetBytes: asked, maxBatch: 4 });
    try {
      expect(info.kvPages).toBe(pages);
      expect(info.kvBudget).toEqual({ asked, granted: pages * pageBytes * 2 * c.layers, limit: 'maxStorageBufferBindingSize' });
      expect(info.warnings).toEqual([
        `kvBudgetBytes was clamped from 1024.00 GiB to 1.25 GiB (${pages} pages of 16 tokens): one layer's K or V may not pass this adapter's maxStorageBufferBindingSize of 128.0 MiB.`,
      ]);
      expect(runner.kv.k.every((b) => b.size === 128 << 20)).toBe(true);
      for (const [i, g] of golden.cases.entries()) expect(await greedy(runner, g.prompt, g.greedy.length, i), `case ${i}`).toEqual(g.greedy);
      // The clamped cache is usable to its end: take every page but the last few (pages are handed out from 0 up), and
      // run a case in those, at the far end of each 128 MiB buffer.
      const g = golden.cases[0];
      const need = Math.ceil((g.prompt.length + g.greedy.length) / 16);
      const taken = Array.from({ length: pages - need }, () => runner.kv.acquire());
      expect(taken[taken.length - 1]).toBe(pages - need - 1);
      expect(await greedy(runner, g.prompt, g.greedy.length, 7)).toEqual(g.greedy);
      for (const p of taken) runner.kv.release(p);
      expect(runner.kv.freePageCount).toBe(pages);
    } finally {
      runner.destroy();
    }
  });

  test('a budget within the limits is granted as whole pages, with no warning', async () => {
    const asked = (4 << 20) + 1000;
    const { runner, info } = await loadModel(gpu, { model: model }, { kvBudgetBytes: asked, maxBatch: 4 });
    try {
      const perPage = 2 * model.config.layers * 16 * model.config.kvHeads * model.config.headDim * 4;
      expect(info.kvBudget).toEqual({ asked, granted: Math.floor(asked / perPage) * perPage });
      expect(info.kvPages).toBe(Math.floor(asked / perPage));
      expect(info.warnings).toBeUndefined();
    } finally {
      runner.destroy();
    }
  });
});
