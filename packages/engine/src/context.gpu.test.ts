// Context limits on real backends in headless Chromium, stories260K (a 512-token context): the demo chat's default
// request (maxTokens 512) on a short prompt is clamped, not refused, and ends with 'length' exactly at the context,
// its first ids the golden ones; a prompt over the context is refused with its counts before any work; strictContext
// refuses the clamp. The rule lives in the engine, so intab's WebGPU kernels and onnxruntime's wasm agree.
import { afterAll, describe, expect, test } from 'vitest';
import { fetchShared, sharedUrl } from '@intab/testing/gpu';
import { Engine } from './engine.ts';
import { ContextLengthExceededError } from './errors.ts';
import { collect } from './test-streams.ts';

const GGUF = { kind: 'url' as const, url: new URL(sharedUrl('models/stories260K/stories260K.gguf'), location.href).href };
const CONTEXT = 512;

interface Golden {
  cases: { prompt: number[]; greedy: number[] }[];
}

const engines: Engine[] = [];
afterAll(async () => {
  for (const e of engines) await e.destroy();
});

describe('context limits on stories260K (context 512)', () => {
  for (const backend of ['webgpu', 'onnx-wasm'] as const) {
    test(`${backend}: maxTokens 512 on a short prompt ends with 'length' at the context; a prompt over it is refused`, async () => {
      const golden: Golden = JSON.parse(new TextDecoder().decode(await fetchShared('models/stories260K/golden.json')));
      const engine = await Engine.load(GGUF, { backend, kvBudgetBytes: 4 << 20, maxBatch: 2, seed: 1 });
      engines.push(engine);
      expect(engine.modelInfo).toMatchObject({ backend: { name: backend }, contextLength: CONTEXT });
      const { prompt, greedy } = golden.cases[0];

      const r = await collect(engine, await engine.start({ promptIds: prompt, maxTokens: 512, temperature: 0, ignoreEos: true }));
      expect(r.last.finishReason).toBe('length');
      expect(prompt.length + r.ids.length).toBe(CONTEXT);
      expect(r.last.metrics).toMatchObject({ promptTokens: prompt.length, completionTokens: CONTEXT - prompt.length });
      expect(r.ids.slice(0, greedy.length)).toEqual(greedy);

      const long = Array.from({ length: 600 }, (_, i) => [...prompt, ...greedy][i % (prompt.length + greedy.length)]);
      const err = await engine.start({ promptIds: long, maxTokens: 16 }).catch((e) => e);
      expect(err).toBeInstanceOf(ContextLengthExceededError);
      expect(err).toMatchObject({ name: 'ContextLengthExceededError', reason: 'prompt', promptTokens: 600, maxTokens: 16, limit: CONTEXT, limitedBy: 'context' });
      const strict = await engine.start({ promptIds: prompt, maxTokens: 512, strictContext: true }).catch((e) => e);
      expect(strict).toMatchObject({ name: 'ContextLengthExceededError', reason: 'max-tokens', promptTokens: prompt.length, maxTokens: 512, limit: CONTEXT });
      expect(engine.stats()).toMatchObject({ streams: 0, running: 0, waiting: 0 });
    });
  }
});
