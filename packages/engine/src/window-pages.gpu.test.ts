// The engine over a model whose sliding-window layers keep only their window (Gemma 3's local layers; the gemma3
// fixture: window 4, pages of 4, so every request runs far past it): with the prefix cache on and off the ids are
// the same — a chat's turns (later turns map the earlier ones' pages, their window pages included), requests sharing
// a prefix in one step, ngram and self speculation — and when all is done every page and window page is back.
import { afterAll, describe, expect, test } from 'vitest';
import { mulberry32, requestGpu, type Gpu } from '@intab/gpu';
import { Runner, bytesSource, openHfFolder, type ModelFiles } from '@intab/model';
import { fixtureFiles } from '@intab/testing/fixtures';
import type { GenerateRequest } from './contract.ts';
import { Engine, type EngineOptions } from './engine.ts';
import { collect, type Collected } from './test-streams.ts';

let gpu: Gpu | undefined;
let files: ModelFiles | undefined;
afterAll(() => gpu?.destroy());

async function setup(engine: EngineOptions = {}) {
  gpu ??= await requestGpu();
  if (!files) {
    const { configJson, safetensorsBytes } = fixtureFiles('gemma3', 7);
    files = await openHfFolder(
      new Map([
        ['config.json', bytesSource('config.json', new TextEncoder().encode(configJson))],
        ['model.safetensors', bytesSource('model.safetensors', safetensorsBytes)],
      ]),
    );
  }
  const runner = await Runner.load(gpu, files.config, files.tensors, { kvBudgetBytes: 1 << 20, pageSize: 4, maxBatch: 4, maxTokensPerStep: 64 });
  return { runner, engine: new Engine({ runner, options: { seed: 2, maxBatch: 4, maxTokensPerStep: 64, ...engine } }) };
}

const words = (seed: number, n: number) => {
  const rng = mulberry32(seed);
  return Array.from({ length: n }, () => 3 + Math.floor(rng() * 120));
};

const run = async (engine: Engine, r: GenerateRequest): Promise<Collected> => collect(engine, await engine.start(r));

describe('sliding-window pages under the engine (gemma3 fixture, window 4, pages of 4)', () => {
  test('a 4-turn chat, requests sharing a prefix in one step and speculative requests: the same ids with the prefix cache on and off; every page comes back', async () => {
    const off = await setup({ prefixCache: false });
    const on = await setup();
    expect(on.runner.kv.window).toMatchObject({ window: 4 });
    const greedy = { maxTokens: 10, temperature: 0, ignoreEos: true };

    // a chat: each turn's prompt is the last one, its reply and a new message
    const turns: Collected[][] = [[], []];
    for (const [i, { engine }] of [off, on].entries()) {
      let prompt = [1, ...words(1, 20)];
      for (let t = 0; t < 4; t++) {
        prompt = [...prompt, ...words(10 + t, 5)];
        const r = await run(engine, { ...greedy, promptIds: prompt });
        turns[i].push(r);
        prompt = [...prompt, ...r.ids];
      }
    }
    expect(turns[1].map((r) => r.ids)).toEqual(turns[0].map((r) => r.ids));
    const m = turns[1].map((r) => r.last.metrics!);
    // the finished turn's last window is kept: the next turn maps all it computed
    for (let t = 1; t < 4; t++) expect(m[t].cachedTokens, `turn ${t}`).toBe(m[t - 1].promptTokens + m[t - 1].completionTokens - 1);

    // four requests sharing a prefix in one step (no window pages of a running prompt are kept: fewer hits, same ids)
    const prefix = [1, ...words(5, 30)];
    const shared = [0, 1, 2, 3].map((i): GenerateRequest => ({ ...greedy, promptIds: [...prefix, ...words(50 + i, 2 + i)] }));
    const together = async (engine: Engine) => Promise.all(await Promise.all(shared.map((r) => engine.start(r))).then((ss) => ss.map((s) => collect(engine, s))));
    const [a, b] = [await together(off.engine), await together(on.engine)];
    expect(b.map((r) => r.ids)).toEqual(a.map((r) => r.ids));

    // speculation rewinds the rejected drafts: within maxRewind, so exact
    for (const speculative of [{ method: 'ngram' as const, k: 4, adaptive: false }, { method: 'self' as const, k: 3, layers: 2, adaptive: false }]) {
      const prompt = [1, ...words(7, 12), ...words(7, 12), ...words(7, 12)];
      const plain = await run(off.engine, { ...greedy, maxTokens: 24, promptIds: prompt });
      const fast = await run(on.engine, { ...greedy, maxTokens: 24, promptIds: prompt, speculative });
      expect(fast.ids, speculative.method).toEqual(plain.ids);
      const spec = fast.last.metrics!.speculative!;
      // (self drafting rewinds every token it drafted, accepted or not)
      expect(spec.proposed, speculative.method).toBeGreaterThan(0);
    }

    for (const { engine, runner } of [off, on]) {
      const stats = engine.stats();
      expect(stats.availablePages).toBe(runner.kv.pages);
      expect(stats.windowPages).toEqual({ free: runner.kv.window!.pages, total: runner.kv.window!.pages });
    }
    await Promise.all([off.engine.destroy(), on.engine.destroy()]);
  });
});
