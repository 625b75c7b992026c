// KV pages read back from the GPU and written into another Runner's cache (what a saved prefix cache does) give the
// same logits as computing them again, bit for bit; a sequence that maps another's pages appends through a
// copy-on-write copy and leaves the shared page untouched. stories260K, headless Chromium (WebGPU).
import { describe, expect, test } from 'vitest';
import { requestGpu } from '@intab/gpu';
import { fetchShared } from '@intab/testing/gpu';
import { Runner } from './runner.ts';
import { openGguf } from './load.ts';
import { bytesSource } from './source.ts';

describe('KV pages on the GPU', () => {
  test('pages restored into a new Runner give the logits of recomputing them; shared pages are copied, never written', async () => {
    const gpu = await requestGpu();
    const bytes = await fetchShared('models/stories260K/stories260K.gguf');
    const model = await openGguf(bytesSource('stories260K.gguf', bytes));
    const a = await Runner.load(gpu, model.config, model.tensors, { kvBudgetBytes: 1 << 20 });
    const b = await Runner.load(gpu, model.config, model.tensors, { kvBudgetBytes: 1 << 20 });
    try {
      expect(a.weights.hash).toMatch(/^xxh128:[0-9a-f]{32}$/);
      expect(await b.pageIO!.key()).toEqual(await a.pageIO!.key()); // same weights, same layout
      const prompt = [1, ...Array.from({ length: 40 }, (_, i) => 3 + ((i * 131) % 500))]; // 41 tokens: 3 pages of 16
      const last = 77;
      // A: prefill, then the logits after one more token.
      a.alloc(0);
      await a.step([{ seq: 0, tokens: prompt }]);
      const fresh = (await a.step([{ seq: 0, tokens: [last] }], { logits: true }))[0].logits!;
      a.rewind(0, 1);
      const pages = [...a.kv.pagesOf(0)];
      const saved = await a.pageIO!.read(pages);
      expect(saved.byteLength).toBe(pages.length * a.pageIO!.pageBytes);
      // B: the same pages written into pages of its own, mapped into a sequence of 41 tokens.
      const mine = pages.map(() => b.kv.acquire());
      await b.pageIO!.write(mine, saved);
      b.adopt(1, mine, prompt.length);
      const restored = (await b.step([{ seq: 1, tokens: [last] }], { logits: true }))[0].logits!;
      expect(restored).toEqual(fresh);
      // The last page was shared (B's cache holds it too): B's write went into a copy; the page itself is unchanged.
      expect(b.kv.pagesOf(1)[2]).not.toBe(mine[2]);
      expect(await b.pageIO!.read([mine[2]])).toEqual(saved.slice(2 * b.pageIO!.pageBytes));
      // A quantized load of the same file is another key.
      const q = await Runner.load(gpu, model.config, model.tensors, { kvBudgetBytes: 1 << 20, quantize: 'q8_0' });
      expect((await q.pageIO!.key()).quantize).toBe('q8_0');
      q.destroy();
    } finally {
      a.destroy();
      b.destroy();
      gpu.destroy();
    }
  });
});
