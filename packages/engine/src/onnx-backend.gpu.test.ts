// The engine on onnxruntime-web in headless Chromium: Engine.load with backend 'onnx-wasm' and 'onnx-webgpu' writes
// the graph from stories260K's GGUF or HF folder, runs it on ORT's wasm or WebGPU execution provider, and gives
// golden.json's greedy ids, and so does an ONNX folder in the onnx-community layout (the test hub serves one that
// @intab/onnx's builder wrote, with external data) by folder URL and by its hub files; engine features (stop strings, logprobs, ngram speculation) give the same ids as on
// intab's WebGPU kernels; abort frees the sequence; 'auto' picks ORT wasm on this machine's software adapter and says
// why; the prefix cache and preload work there too; what the backend cannot do (self-speculation, quantize) is refused
// with a typed error.
import { afterAll, describe, expect, inject, test } from 'vitest';
import { sharedUrl, fetchShared } from '@intab/testing/gpu';
import type { GenerateRequest, LoadOptions, ModelSource } from './contract.ts';
import { Engine } from './engine.ts';
import { collect } from './test-streams.ts';

const BASE = new URL(sharedUrl('models/stories260K/'), location.href).href;
const GGUF: ModelSource = { kind: 'url', url: BASE + 'stories260K.gguf' };
const HF: ModelSource = { kind: 'url', url: BASE + 'hf/' };
/** stories260K as an onnx-community folder on the local test hub (scripts/hub-server-setup.mjs wrote it). */
const ONNX_REPO = `${inject('hubUrl')}/test/stories-onnx/resolve/main/`;

declare module 'vitest' {
  export interface ProvidedContext {
    hubUrl: string;
  }
}

interface Golden {
  cases: { prompt: number[]; greedy: number[] }[];
}
const golden = async (): Promise<Golden> => JSON.parse(new TextDecoder().decode(await fetchShared('models/stories260K/golden.json')));

const engines: Engine[] = [];
afterAll(async () => {
  for (const e of engines) await e.destroy();
});

async function load(source: ModelSource, options: LoadOptions): Promise<Engine> {
  const engine = await Engine.load(source, { kvBudgetBytes: 2 << 20, maxBatch: 4, ...options, seed: 1 } as LoadOptions);
  engines.push(engine);
  return engine;
}

const greedy = (promptIds: number[], maxTokens: number, extra: Partial<GenerateRequest> = {}): GenerateRequest => ({ promptIds, maxTokens, temperature: 0, ignoreEos: true, ...extra });

describe('the engine on onnxruntime-web (stories260K)', () => {
  for (const [backend, source, label] of [
    ['onnx-wasm', GGUF, 'GGUF'],
    ['onnx-wasm', HF, 'HF folder'],
    ['onnx-webgpu', GGUF, 'GGUF'],
  ] as const) {
    test(`${backend}, graph written from the ${label}: golden greedy ids`, async () => {
      const g = await golden();
      const engine = await load(source, { backend });
      const info = engine.modelInfo!;
      expect(info.backend.name).toBe(backend);
      expect(info.prefixCache).toBe(true);
      for (const c of g.cases) expect((await collect(engine, await engine.start(greedy(c.prompt, c.greedy.length)))).ids).toEqual(c.greedy);
      // Again, over the cached prompt (its K/V kept from the first run: on the WebGPU EP, in GPU buffers read back).
      const again = await collect(engine, await engine.start(greedy(g.cases[1].prompt, g.cases[1].greedy.length)));
      expect(again.ids).toEqual(g.cases[1].greedy);
      expect(again.last.metrics!.cachedTokens).toBe(g.cases[1].prompt.length - 1);
      if (backend === 'onnx-webgpu') {
        // K/V stay in GPU buffers between steps; ngram speculation rewinds them (read back and cut) and the ids hold.
        expect(info.adapter).toContain('K/V on the GPU');
        const c = g.cases[1];
        const spec = await collect(engine, await engine.start(greedy(c.prompt, 40, { speculative: { method: 'ngram', k: 4 } })));
        expect(spec.ids).toEqual(c.greedy.slice(0, 40));
        expect(spec.last.metrics?.speculative?.verifySteps).toBeGreaterThan(0);
      }
      // Both at once: their decode steps share one batched call (left-padded K/V of different lengths; with K/V on
      // the GPU, one call each).
      if (backend === 'onnx-webgpu') return;
      const together = await Promise.all(g.cases.map(async (c) => (await collect(engine, await engine.start(greedy(c.prompt, c.greedy.length)))).ids));
      together.forEach((ids, i) => expect(ids, `case ${i} batched`).toEqual(g.cases[i].greedy));
    });
  }

  test('an ONNX folder (onnx/model.onnx + model.onnx_data), by folder URL (WebGPU EP and wasm) and by its files: golden ids; auto runs it on ORT', async () => {
    const g = await golden();
    const onGpu = await load({ kind: 'url', url: ONNX_REPO }, { backend: 'onnx-webgpu' });
    expect((await collect(onGpu, await onGpu.start(greedy(g.cases[1].prompt, 24)))).ids).toEqual(g.cases[1].greedy.slice(0, 24));
    const byUrl = await load({ kind: 'url', url: ONNX_REPO }, { backend: 'onnx-wasm' });
    expect(byUrl.modelInfo!.adapter).toContain('onnx/model.onnx');
    for (const c of g.cases) expect((await collect(byUrl, await byUrl.start(greedy(c.prompt, c.greedy.length)))).ids).toEqual(c.greedy);
    const files = { 'config.json': ONNX_REPO + 'config.json', 'onnx/model.onnx': ONNX_REPO + 'onnx/model.onnx', 'onnx/model.onnx_data': ONNX_REPO + 'onnx/model.onnx_data' };
    const auto = await load({ kind: 'hf-urls', files }, {});
    expect(auto.modelInfo!.backend.name).toBe('onnx-wasm');
    const c = g.cases[1];
    expect((await collect(auto, await auto.start(greedy(c.prompt, c.greedy.length)))).ids).toEqual(c.greedy);
    // intab's WebGPU kernels run GGUF and safetensors, not ONNX graphs.
    await expect(Engine.load({ kind: 'hf-urls', files }, { backend: 'webgpu' })).rejects.toMatchObject({ name: 'ModelSourceError', message: expect.stringContaining("backend 'onnx-webgpu', 'onnx-wasm' or 'auto'") });
    // Without its external data, the graph is refused with a typed error that names the missing file.
    const { 'onnx/model.onnx_data': _, ...withoutData } = files;
    await expect(Engine.load({ kind: 'hf-urls', files: withoutData }, { backend: 'onnx-wasm' })).rejects.toMatchObject({ name: 'OnnxFormatError', message: expect.stringContaining("'model.onnx_data'") });
  });

  test("'auto' takes ORT wasm on a software adapter and says why; what only intab's kernels do is skipped with a warning", async () => {
    // A page written for WebGPU (quantize, preload) still loads where 'auto' picks onnxruntime; the preload is kept.
    const engine = await load(GGUF, { backend: 'auto', quantize: 'q8_0', preload: { promptIds: [1, 403, 261] } });
    const info = engine.modelInfo!;
    expect(info.backend.name).toBe('onnx-wasm');
    expect(info.backend.reason).toMatch(/software/);
    expect(info.preloaded).toEqual([expect.objectContaining({ tokens: 3 })]);
    expect(info.warnings).toEqual([expect.stringContaining("quantize 'q8_0' was ignored")]);
    // Asked for by name, quantize is an error; a preload is not.
    await expect(Engine.load(GGUF, { backend: 'onnx-wasm', quantize: 'q8_0' })).rejects.toMatchObject({ name: 'InvalidRequestError', field: 'quantize' });
    const named = await Engine.load(GGUF, { backend: 'onnx-wasm', preload: { promptIds: [1] } });
    expect(named.modelInfo!.preloaded).toEqual([expect.objectContaining({ tokens: 1 })]);
    await named.destroy();
  });

  test('stop strings, logprobs, ngram speculation, sampling and a JSON schema give the same ids as on the WebGPU kernels; abort frees the sequence', async () => {
    const g = await golden();
    // The GGUF with a tokenizer, so stop strings have text to match.
    const withVocab: ModelSource = { kind: 'url', url: BASE + 'stories260K-vocab-ud.gguf' };
    const onnx = await load(withVocab, { backend: 'onnx-wasm' });
    const gpu = await load(withVocab, { backend: 'webgpu', prefixCache: false });
    const c = g.cases[1];
    const plain = await collect(gpu, await gpu.start(greedy(c.prompt, 40)));
    const stop = plain.text.slice(20, 24);
    const requests: GenerateRequest[] = [
      greedy(c.prompt, 40, { logprobs: true, topLogprobs: 3 }),
      greedy(c.prompt, 48, { speculative: { method: 'ngram', k: 4 } }),
      greedy(c.prompt, 40, { stop: [stop] }),
      greedy(c.prompt, 40, { stopTokenIds: [c.greedy[10]] }),
      { promptIds: c.prompt, maxTokens: 30, temperature: 0.9, topK: 20, seed: 7, ignoreEos: true },
      // A JSON schema: every token sampled under the grammar's mask (byte tokens spell the JSON).
      { prompt: 'Once', maxTokens: 80, temperature: 1, seed: 4, responseFormat: { type: 'json_schema', schema: { type: 'object', properties: { name: { type: 'string', maxLength: 8 }, n: { type: 'integer', minimum: 1, maximum: 99 } }, required: ['name', 'n'], additionalProperties: false } } },
    ];
    for (const [i, r] of requests.entries()) {
      const a = await collect(onnx, await onnx.start(r));
      const b = await collect(gpu, await gpu.start(r));
      expect(a.ids, `request ${i}`).toEqual(b.ids);
      expect(a.last.finishReason).toBe(b.last.finishReason);
      if (r.responseFormat) {
        expect(a.last.finishReason).toBe('stop');
        expect(Object.keys(JSON.parse(a.text))).toEqual(['name', 'n']);
      }
      if (r.logprobs) {
        const la = a.chunks.flatMap((x) => x.logprobs ?? []);
        const lb = b.chunks.flatMap((x) => x.logprobs ?? []);
        expect(la.length).toBe(lb.length);
        la.forEach((x, j) => expect(x.logprob).toBeCloseTo(lb[j].logprob, 3));
      }
    }
    // Abort mid-decode: the pages come back.
    const before = onnx.stats().freePages;
    const controller = new AbortController();
    const id = await onnx.start(greedy(c.prompt, 400), controller.signal);
    const first = await onnx.next(id);
    expect(first.ids.length).toBeGreaterThan(0);
    controller.abort();
    await collect(onnx, id).catch(() => undefined);
    await expect.poll(() => onnx.stats().freePages).toBe(before);
  });

  test('what ORT cannot do is refused with a typed error', async () => {
    const engine = await load(GGUF, { backend: 'onnx-wasm' });
    await expect(engine.start(greedy([1], 4, { speculative: 'self' }))).rejects.toMatchObject({ name: 'InvalidRequestError' });
  });
});
