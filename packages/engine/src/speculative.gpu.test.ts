// Speculative decoding over the real GPU Runner (headless Chromium, WebGPU): with every proposer — prompt
// lookup, the target's first layers, and a draft model (stories260K quantized to q8_0 on load: the same
// vocabulary, slightly different numerics, so some proposals are rejected) — stories260K's greedy ids equal
// golden.json, alone and four requests in one batch, and every page of target and draft is free afterwards.
import { afterAll, describe, expect, test } from 'vitest';
import { requestGpu, type Gpu } from '@intab/gpu';
import { fetchShared } from '@intab/testing/gpu';
import { Runner, bytesSource, openGguf } from '@intab/model';
import type { SpeculativeMethod } from './contract.ts';
import { Engine } from './engine.ts';
import { collect } from './test-streams.ts';

interface Golden {
  cases: { prompt: number[]; greedy: number[] }[];
}

const fetchBytes = (name: string) => fetchShared(`models/stories260K/${name}`);

let gpu: Gpu | undefined;
afterAll(() => gpu?.destroy());

describe('speculative decoding over the GPU Runner (stories260K)', () => {
  test('ngram, self and draft: greedy ids equal golden.json alone and in a batch of 4; pages all free', async () => {
    gpu ??= await requestGpu();
    const golden: Golden = JSON.parse(new TextDecoder().decode(await fetchBytes('golden.json')));
    const bytes = await fetchBytes('stories260K.gguf');
    const model = await openGguf(bytesSource('stories260K.gguf', bytes));
    const runner = await Runner.load(gpu, model.config, model.tensors, { kvBudgetBytes: 4 << 20, maxBatch: 8 });
    const draft = await Runner.load(gpu, model.config, model.tensors, { kvBudgetBytes: 4 << 20, maxBatch: 8, quantize: 'q8_0' });
    const engine = new Engine({ runner, draft, options: { seed: 1, maxBatch: 4 } });
    try {
      const requests = golden.cases.map((c) => ({ promptIds: c.prompt, maxTokens: c.greedy.length, temperature: 0, ignoreEos: true }));
      for (const method of ['ngram', 'self', 'draft'] as SpeculativeMethod[]) {
        const speculative = { method, k: 4, adaptive: false };
        const alone = await collect(engine, await engine.start({ ...requests[0], speculative }));
        expect(alone.ids, `${method} alone`).toEqual(golden.cases[0].greedy);
        const m = alone.last.metrics!.speculative!;
        expect(m.verifySteps, method).toBeGreaterThan(0);
        // the q8_0 draft agrees with the f32 target most of the time: its proposals are mostly accepted
        if (method === 'draft') expect(m.accepted / m.proposed).toBeGreaterThan(0.5);
        const batch = Array.from({ length: 4 }, (_, i) => requests[i % requests.length]);
        const ids = await Promise.all(batch.map((r) => engine.start({ ...r, speculative })));
        const outs = await Promise.all(ids.map((id) => collect(engine, id)));
        outs.forEach((o, i) => expect(o.ids, `${method} batched ${i}`).toEqual(golden.cases[i % golden.cases.length].greedy));
        expect(engine.stats(), method).toMatchObject({ streams: 0, availablePages: runner.kv.pages });
        expect(draft.kv.availablePageCount, method).toBe(draft.kv.pages);
      }
    } finally {
      await engine.destroy();
    }
  }, 240_000);
});
