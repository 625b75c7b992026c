// Qwen3.5 under the engine on WebGPU (a small random qwen35 GGUF: three Gated DeltaNet layers and one gated attention
// layer; each sequence's recurrent state in a slot of its own): four concurrent requests give each one's ids alone;
// an abort mid-prefill gives back its slot and pages; ngram speculation (verify steps whose rejected proposals are
// rewound by restoring the state and replaying the kept tokens) gives the ids of plain decoding; the prefix cache is
// off for such a model and says why, so its ids are the same with it asked on or off; self-speculation and more
// sequences than slots are handled, not failed.
import { afterAll, describe, expect, test } from 'vitest';
import { requestGpu, type Gpu } from '@intab/gpu';
import { Runner, bytesSource, openGguf, type ModelFiles } from '@intab/model';
import { syntheticGguf, type SyntheticShape } from '@intab/testing/synthetic';
import type { GenerateRequest } from './contract.ts';
import { Engine, type EngineOptions } from './engine.ts';
import { collect, type Collected } from './test-streams.ts';

const SHAPE: SyntheticShape = {
  hidden: 64, ffn: 128, layers: 4, heads: 4, kvHeads: 2, headDim: 32, vocab: 256, ropeTheta: 10000000, context: 512, arch: 'qwen35',
  rotaryDim: 8, linear: { interval: 4, convKernel: 4, kHeads: 2, vHeads: 4, headDim: 16 },
};

let gpu: Gpu | undefined;
let files: ModelFiles | undefined;
afterAll(() => gpu?.destroy());

async function setup(options: EngineOptions = {}, maxBatch = 4) {
  gpu ??= await requestGpu();
  files ??= await openGguf(bytesSource('qwen35.gguf', syntheticGguf(SHAPE, 'f32', 11, { qkScale: 8 })));
  const runner = await Runner.load(gpu, files.config, files.tensors, { kvBudgetBytes: 1 << 20, pageSize: 8, maxBatch, maxTokensPerStep: 32 });
  return { runner, engine: new Engine({ runner, options: { seed: 3, maxBatch, maxTokensPerStep: 32, ...options } }) };
}

const run = async (engine: Engine, r: GenerateRequest): Promise<Collected> => collect(engine, await engine.start(r));
const prompt = (n: number, s: number) => Array.from({ length: n }, (_, i) => (5 + 29 * i + 13 * s) % 256);

describe('Qwen3.5 under the engine (WebGPU)', () => {
  test('four concurrent requests, greedy and seeded, give each one\'s ids alone; all slots and pages come back', async () => {
    const { engine, runner } = await setup();
    const requests: GenerateRequest[] = [
      { promptIds: prompt(9, 0), maxTokens: 12, temperature: 0, ignoreEos: true },
      { promptIds: prompt(40, 1), maxTokens: 8, temperature: 0.8, seed: 4, ignoreEos: true },
      { promptIds: prompt(3, 2), maxTokens: 15, temperature: 0, ignoreEos: true },
      { promptIds: prompt(21, 3), maxTokens: 10, temperature: 1.1, topK: 20, seed: 9, ignoreEos: true },
    ];
    const alone: number[][] = [];
    for (const r of requests) alone.push((await run(engine, r)).ids);
    const together = await Promise.all(await Promise.all(requests.map((r) => engine.start(r))).then((ids) => ids.map((id) => collect(engine, id))));
    expect(together.map((r) => r.ids)).toEqual(alone);
    expect([runner.freeSequenceSlots, runner.kv.availablePageCount]).toEqual([4, runner.kv.pages]);
    await engine.destroy();
  });

  test('more requests than state slots wait for one; an abort mid-prefill gives its slot and pages back', async () => {
    const { engine, runner } = await setup({}, 2);
    const requests = [0, 1, 2, 3, 4].map((s): GenerateRequest => ({ promptIds: prompt(6 + s, 10 + s), maxTokens: 6, temperature: 0, ignoreEos: true }));
    const alone: number[][] = [];
    for (const r of requests) alone.push((await run(engine, r)).ids);
    const together = await Promise.all(await Promise.all(requests.map((r) => engine.start(r))).then((ids) => ids.map((id) => collect(engine, id))));
    expect(together.map((r) => r.ids)).toEqual(alone);

    const controller = new AbortController();
    const id = await engine.start({ promptIds: prompt(200, 7), maxTokens: 4, temperature: 0 }, controller.signal);
    await new Promise((resolve) => setTimeout(resolve, 0));
    const chunks = collect(engine, id);
    for (let i = 0; i < 200 && runner.kv.length(id) === 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(runner.kv.length(id)).toBeGreaterThan(0); // prefilling, in chunks of 32
    controller.abort();
    const r = await chunks;
    expect(r.last.finishReason).toBe('abort');
    expect(r.ids).toEqual([]);
    expect([runner.freeSequenceSlots, runner.kv.availablePageCount]).toEqual([2, runner.kv.pages]);
    expect((await run(engine, requests[2])).ids).toEqual(alone[2]);
    await engine.destroy();
  });

  test('ngram speculation gives the ids of plain decoding; self-speculation and a preload are refused with the reason', async () => {
    const { engine, runner } = await setup();
    const repetitive = [...prompt(10, 5), ...prompt(10, 5), ...prompt(10, 5)];
    const plain = await run(engine, { promptIds: repetitive, maxTokens: 40, temperature: 0, ignoreEos: true });
    const fast = await run(engine, { promptIds: repetitive, maxTokens: 40, temperature: 0, ignoreEos: true, speculative: { method: 'ngram', k: 4, adaptive: false } });
    expect(fast.ids).toEqual(plain.ids);
    const spec = fast.last.metrics!.speculative!;
    expect(spec.proposed).toBeGreaterThan(spec.accepted); // rejected proposals were rewound
    expect(spec.accepted).toBeGreaterThan(0);
    await expect(engine.start({ promptIds: repetitive, maxTokens: 4, speculative: 'self' })).rejects.toThrow(/Gated DeltaNet/);
    // the prefix cache, asked for, is off: the same ids, and preload says why
    expect(engine.stats().prefixCache).toBeUndefined();
    await expect(engine.preload({ promptIds: repetitive })).rejects.toThrow(/Gated DeltaNet/);
    const again = await run(engine, { promptIds: repetitive, maxTokens: 40, temperature: 0, ignoreEos: true });
    expect(again.ids).toEqual(plain.ids);
    expect([runner.freeSequenceSlots, runner.kv.availablePageCount]).toEqual([4, runner.kv.pages]);
    await engine.destroy();
  });
});
