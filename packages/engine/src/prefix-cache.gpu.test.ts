// The prefix cache over the real GPU Runner (headless Chromium, WebGPU, stories260K) and over intab's CPU kernels (the
// CpuRunner 'onnx-wasm' runs a q4_0 GGUF on: a small random Llama with stories260K's vocabulary, in the same browser),
// every test on each: ids with the cache on equal the
// ids with it off — a chat's turns greedy and seeded, requests sharing a prefix in one step, speculative (ngram, self,
// draft) and regex-constrained requests over shared pages — and the cache persisted to the Origin Private File
// System: save → a new engine → restore gives the same ids without prefilling; a save for other weights is ignored;
// a damaged or truncated file is detected, deleted and reported, and the load still succeeds.
import { afterAll, describe, expect, test } from 'vitest';
import { cdp } from 'vitest/browser';
import { mulberry32, requestGpu, type Gpu } from '@intab/gpu';
import { fetchShared, sharedUrl } from '@intab/testing/gpu';
import { Runner, bytesSource, openGguf, openTokenizer, type ModelFiles, type StepRunner } from '@intab/model';
import { syntheticGguf } from '@intab/testing/synthetic';
import type { GenerateRequest, ModelInfo, ModelSource, SpeculativeMethod } from './contract.ts';
import { Engine, type EngineOptions } from './engine.ts';
import { describeModel } from './open-model.ts';
import { loadOnnxModel } from './load.ts';
import { kvFileName, opfsFolder } from './kv-file.ts';
import { CacheStorageError } from './errors.ts';
import { collect, type Collected } from './test-streams.ts';

let gpu: Gpu | undefined;
const models = new Map<string, ModelFiles>();
afterAll(() => gpu?.destroy());

/** Which runner the engine drives: intab's WebGPU kernels, or its CPU kernels ('onnx-wasm' on a q4_0 GGUF). */
type Kind = 'webgpu' | 'cpu-kernels';

async function model(name: 'stories260K.gguf' | 'stories260K-vocab-ud.gguf'): Promise<ModelFiles> {
  if (!models.has(name)) models.set(name, await openGguf(bytesSource(name, await fetchShared(`models/stories260K/${name}`))));
  return models.get(name)!;
}

/**
 * The CPU kernels' model: a small random Llama in q4_0 (q8_0: "other weights") with stories260K's vocabulary and text
 * tokens, so prompts of ids and of text run as on stories260K.
 */
async function cpuModel(dtype: 'q4_0' | 'q8_0'): Promise<{ model: ModelFiles; bytes: Uint8Array<ArrayBuffer> }> {
  const vocab = await model('stories260K-vocab-ud.gguf');
  const shape = { hidden: 64, ffn: 128, layers: 4, heads: 4, kvHeads: 2, headDim: 16, vocab: 0, ropeTheta: 10000, context: 512 };
  const bytes = syntheticGguf(shape, dtype, 7, { tokenizer: openTokenizer(vocab)!, qkScale: 4 }) as Uint8Array<ArrayBuffer>;
  return { model: await openGguf(bytesSource(`cpu-${dtype}.gguf`, bytes)), bytes };
}

async function setup(kind: Kind, o: { engine?: EngineOptions; file?: 'stories260K.gguf' | 'stories260K-vocab-ud.gguf'; draft?: boolean; quantize?: 'q8_0' } = {}) {
  if (kind === 'cpu-kernels') {
    const { model: m } = await cpuModel(o.quantize ?? 'q4_0');
    const tokenizer = openTokenizer(m);
    const { runner, draft, info } = await loadOnnxModel({ model: m, tokenizer, draftModel: o.draft ? m : undefined }, { name: 'onnx-wasm', reason: 'test' }, { kvBudgetBytes: 2 << 20, maxBatch: 8 });
    expect(info.adapter).toMatch(/^intab's wasm SIMD128 kernels \(q[48]_0, 1 thread: the page is not cross-origin isolated \(.*\)\)$/);
    const engine = new Engine({ runner, draft, tokenizer, info, options: { seed: 2, maxBatch: 8, ...o.engine } });
    return { engine, runner, info };
  }
  gpu ??= await requestGpu();
  const m = await model(o.file ?? 'stories260K.gguf');
  const runner = await Runner.load(gpu, m.config, m.tensors, { kvBudgetBytes: 2 << 20, maxBatch: 8, quantize: o.quantize });
  const draft = o.draft ? await Runner.load(gpu, m.config, m.tensors, { kvBudgetBytes: 2 << 20, maxBatch: 8, quantize: 'q8_0' }) : undefined;
  const tokenizer = openTokenizer(m);
  const info: ModelInfo = describeModel(gpu, runner, tokenizer, draft);
  const engine = new Engine({ runner, draft, tokenizer, info, options: { seed: 2, maxBatch: 8, ...o.engine } });
  return { engine, runner: runner as StepRunner, info };
}

const run = async (engine: Engine, r: GenerateRequest): Promise<Collected> => collect(engine, await engine.start(r));

const words = (seed: number, n: number) => {
  const rng = mulberry32(seed);
  return Array.from({ length: n }, () => 3 + Math.floor(rng() * 500));
};

/** A conversation's prompts: the previous prompt, the model's reply, then a new message, turn after turn. */
async function chat(engine: Engine, options: GenerateRequest, turns: number): Promise<Collected[]> {
  const out: Collected[] = [];
  let prompt = [1, ...words(1, 35)];
  for (let t = 0; t < turns; t++) {
    prompt = [...prompt, ...words(10 + t, 6 + 2 * t)];
    const r = await run(engine, { ...options, promptIds: prompt });
    out.push(r);
    prompt = [...prompt, ...r.ids];
  }
  return out;
}

for (const kind of ['webgpu', 'cpu-kernels'] as Kind[]) {
  describe(`prefix cache over ${kind === 'webgpu' ? 'the GPU Runner' : 'the CPU kernels (onnx-wasm)'}`, () => {
    test('a 5-turn chat, greedy and seeded: the same ids with the cache on and off; later turns map the earlier ones', async () => {
      const off = await setup(kind, { engine: { prefixCache: false } });
      const on = await setup(kind);
      for (const options of [
        { maxTokens: 12, temperature: 0, ignoreEos: true },
        { maxTokens: 12, temperature: 0.8, topK: 40, seed: 9, ignoreEos: true },
      ]) {
        const a = await chat(off.engine, options, 5);
        const b = await chat(on.engine, options, 5);
        expect(b.map((r) => r.ids)).toEqual(a.map((r) => r.ids));
        const m = b.map((r) => r.last.metrics!);
        for (let t = 1; t < 5; t++) expect(m[t].cachedTokens, `turn ${t}`).toBe(m[t - 1].promptTokens + m[t - 1].completionTokens - 1);
      }
      expect(on.engine.stats().availablePages).toBe(on.runner.kv.pages);
      await Promise.all([off.engine.destroy(), on.engine.destroy()]);
    });

    test('four requests sharing a prefix in one step, then four more over its cached pages: the ids of each alone', async () => {
      const off = await setup(kind, { engine: { prefixCache: false } });
      const { engine, runner } = await setup(kind, { engine: { maxTokensPerStep: 64 } });
      const prefix = [1, ...words(5, 45)];
      const requests = [0, 1, 2, 3].map((i): GenerateRequest => ({ promptIds: [...prefix, ...words(50 + i, 2 + i)], maxTokens: 10, temperature: 0, ignoreEos: true }));
      const expected: number[][] = [];
      for (const r of requests) expected.push((await run(off.engine, r)).ids);
      const log: number[][] = [];
      const step = runner.step.bind(runner);
      runner.step = (entries, o) => (log.push(entries.map((e) => e.seq)), step(entries, o));
      const first = await Promise.all(requests.map((r) => run(engine, r)));
      expect(first.map((r) => r.ids)).toEqual(expected);
      expect(log.some((s) => s.length === 4)).toBe(true);
      const second = await Promise.all(requests.map((r) => run(engine, r)));
      expect(second.map((r) => r.ids)).toEqual(expected);
      for (const r of second) expect(r.last.metrics!.cachedTokens).toBe(r.last.metrics!.promptTokens - 1);
      await Promise.all([off.engine.destroy(), engine.destroy()]);
    });

    test('speculative (ngram, self, draft) over shared pages: the ids of plain decoding without the cache', async () => {
      const off = await setup(kind, { engine: { prefixCache: false } });
      const { engine } = await setup(kind, { draft: true });
      const golden = JSON.parse(new TextDecoder().decode(await fetchShared('models/stories260K/golden.json'))) as { cases: { prompt: number[]; greedy: number[] }[] };
      const c = golden.cases[1];
      // Caches the prompt and the model's reply (stories260K's golden ids on the GPU Runner), which the grounded prompt repeats.
      const reply = (await run(engine, { promptIds: c.prompt, maxTokens: c.greedy.length, temperature: 0, ignoreEos: true })).ids;
      const grounded = [...c.prompt, ...reply.slice(0, 24), ...c.prompt.slice(1)];
      const plain = await run(off.engine, { promptIds: grounded, maxTokens: 24, temperature: 0, ignoreEos: true });
      for (const method of ['ngram', 'self', 'draft'] as SpeculativeMethod[]) {
        const r = await run(engine, { promptIds: grounded, maxTokens: 24, temperature: 0, ignoreEos: true, speculative: { method, k: 4, adaptive: false } });
        expect(r.ids, method).toEqual(plain.ids);
        expect(r.last.metrics!.cachedTokens, method).toBeGreaterThanOrEqual(c.prompt.length + 24);
        expect(r.last.metrics!.speculative!.verifySteps, method).toBeGreaterThan(0);
      }
      await Promise.all([off.engine.destroy(), engine.destroy()]);
    });

    test('regex-constrained requests over a cached prompt: the same text as without the cache', async () => {
      const off = await setup(kind, { file: 'stories260K-vocab-ud.gguf', engine: { prefixCache: false } });
      const on = await setup(kind, { file: 'stories260K-vocab-ud.gguf' });
      const prompt = '<t300><t301><t302><t303><t304><t305><t306><t307><t308><t309><t310><t311><t312><t313><t314><t315><t316><t317><t318><t319>';
      for (const seed of [1, 2, 3]) {
        const r: GenerateRequest = { prompt, maxTokens: 40, temperature: 1, seed, regex: '[a-z]{3,8}( [a-z]{2,6}){1,3}' };
        const a = await run(off.engine, r);
        const b = await run(on.engine, r);
        expect(b.text, `seed ${seed}`).toBe(a.text);
        expect(b.last.finishReason).toBe('stop');
        expect(b.text).toMatch(/^[a-z]{3,8}( [a-z]{2,6}){1,3}$/);
        if (seed > 1) expect(b.last.metrics!.cachedTokens).toBeGreaterThan(16);
      }
      await Promise.all([off.engine.destroy(), on.engine.destroy()]);
    });
  });

  describe(`prefix cache in the Origin Private File System (${kind})`, () => {
    const system = [1, ...words(77, 100)]; // 101 tokens: 6 full pages and a partial one
    const request: GenerateRequest = { promptIds: [...system, ...words(78, 6)], maxTokens: 16, temperature: 0, ignoreEos: true };

    /** The saved-cache folder, without this model's file (other test files save files of their own models there). */
    async function clean(): Promise<FileSystemDirectoryHandle> {
      const folder = (await opfsFolder())!;
      const { runner, engine } = await setup(kind);
      const name = await kvFileName(JSON.stringify({ format: 1, ...(await runner.pageIO!.key()) }));
      await engine.destroy();
      await folder.removeEntry(name).catch(() => {});
      return folder;
    }

    test('save → a new engine → restore: the same ids, the prefix not prefilled again', async () => {
      await clean();
      const a = await setup(kind);
      const pre = await a.engine.preload({ promptIds: system });
      expect(pre).toMatchObject({ tokens: 101, cachedTokens: 0 });
      const expected = await run(a.engine, request);
      const saved = await a.engine.saveCache();
      expect(saved).toMatchObject({ pages: 7, tokens: 101 });
      expect(saved.bytes).toBeGreaterThan(7 * a.runner.pageIO!.pageBytes);
      expect(saved.file).toBe(`intab/kv-cache/${await kvFileName(JSON.stringify({ format: 1, ...(await a.runner.pageIO!.key()) }))}`);
      await a.engine.destroy();

      const b = await setup(kind);
      await b.engine.restore(b.info);
      expect(b.info.restored).toMatchObject({ pages: 7, tokens: 101, bytes: saved.bytes });
      expect(b.info.warnings).toBeUndefined();
      const r = await run(b.engine, request);
      expect(r.ids).toEqual(expected.ids);
      expect(r.last.metrics!.cachedTokens).toBe(101);
      // A preload of the restored prefix pins it without prefilling.
      expect((await b.engine.preload({ promptIds: system })).cachedTokens).toBe(101);
      // { all: true } saves the whole tree (the request's pages too).
      expect((await b.engine.saveCache({ all: true })).pages).toBeGreaterThan(7);
      await b.engine.destroy();
    });

    test('a save for other weights (q8_0 on load) is ignored; the load succeeds and recomputes', async () => {
      await clean();
      const a = await setup(kind);
      await a.engine.preload({ promptIds: system });
      await a.engine.saveCache();
      await a.engine.destroy();
      const q = await setup(kind, { quantize: 'q8_0' });
      await q.engine.restore(q.info);
      expect(q.info.restored).toBeUndefined();
      expect(q.info.warnings).toBeUndefined();
      const r = await run(q.engine, request);
      expect(r.last.metrics!.cachedTokens).toBe(0);
      await q.engine.destroy();
      // The f32 file is still there for the f32 model.
      const b = await setup(kind);
      await b.engine.restore(b.info);
      expect(b.info.restored?.pages).toBe(7);
      await b.engine.destroy();
    });

    for (const damage of ['a flipped byte', 'a truncated file'] as const) {
      test(`${damage} is detected, deleted and reported; the load succeeds`, async () => {
        const folder = await clean();
        const a = await setup(kind);
        await a.engine.preload({ promptIds: system });
        const saved = await a.engine.saveCache();
        await a.engine.destroy();
        const name = saved.file.split('/').pop()!;
        const file = await (await folder.getFileHandle(name)).getFile();
        const bytes = new Uint8Array(await file.arrayBuffer());
        const w = await (await folder.getFileHandle(name)).createWritable();
        if (damage === 'a flipped byte') {
          bytes[bytes.length - 1000] ^= 0x01; // inside the last page's data
          await w.write(bytes);
        } else await w.write(bytes.slice(0, bytes.length - 4096));
        await w.close();
        const b = await setup(kind);
        await b.engine.restore(b.info);
        expect(b.info.restored).toBeUndefined();
        expect(b.info.warnings).toHaveLength(1);
        expect(b.info.warnings![0]).toMatch(damage === 'a flipped byte' ? /checksum/ : /truncated/);
        expect(b.info.warnings![0]).toMatch(/deleted/);
        await expect(folder.getFileHandle(name)).rejects.toThrow();
        // Nothing of it was used: every page is free, and the request is computed (and correct).
        expect(b.engine.stats()).toMatchObject({ freePages: b.runner.kv.pages, prefixCache: { cachedPages: 0 } });
        const ref = await setup(kind, { engine: { prefixCache: false } });
        expect((await run(b.engine, request)).ids).toEqual((await run(ref.engine, request)).ids);
        await Promise.all([b.engine.destroy(), ref.engine.destroy()]);
      });
    }

    test('a full storage quota is a CacheStorageError that says what to do; the previous save stays usable', async () => {
      const folder = await clean();
      const a = await setup(kind);
      await a.engine.preload({ promptIds: system });
      const saved = await a.engine.saveCache();
      // Let the origin store little more than what it holds (CDP's quota override, as a full disk would).
      const session = cdp();
      const { usage = 0 } = await navigator.storage.estimate();
      await session.send('Storage.overrideQuotaForOrigin', { origin: location.origin, quotaSize: usage + (64 << 10) });
      try {
        await run(a.engine, { promptIds: [1, ...words(5, 300)], maxTokens: 2, temperature: 0 });
        const err = await a.engine.saveCache({ all: true }).catch((e) => e);
        expect(err).toBeInstanceOf(CacheStorageError);
        expect(err).toMatchObject({ reason: 'QuotaExceededError', file: saved.file });
        expect(err.message).toMatch(/quota is full: save the pinned prefixes only/);
      } finally {
        await session.send('Storage.overrideQuotaForOrigin', { origin: location.origin });
      }
      await a.engine.destroy();
      const name = saved.file.split('/').pop()!;
      expect((await (await folder.getFileHandle(name)).getFile()).size).toBe(saved.bytes);
      const b = await setup(kind);
      await b.engine.restore(b.info);
      expect(b.info.restored).toMatchObject({ pages: 7, tokens: 101 });
      await b.engine.destroy();
    });

    test('Engine.load restores by itself, and preloads after restoring', async () => {
      await clean();
      // The WebGPU kernels' file by URL; the CPU kernels' (made here) as a File, on 'onnx-wasm'.
      const source: ModelSource = kind === 'webgpu' ? { kind: 'url', url: new URL(sharedUrl('models/stories260K/stories260K.gguf'), location.href).href } : { kind: 'files', files: [{ name: 'cpu-q4_0.gguf', blob: new Blob([(await cpuModel('q4_0')).bytes]) }] };
      const backend = kind === 'webgpu' ? 'webgpu' : 'onnx-wasm';
      const first = await Engine.load(source, { kvBudgetBytes: 2 << 20, preload: { promptIds: system }, backend });
      if (kind === 'cpu-kernels') expect(first.modelInfo).toMatchObject({ backend: { name: 'onnx-wasm' }, adapter: "intab's wasm SIMD128 kernels (q4_0, 1 thread: the page is not cross-origin isolated (serve it with COOP same-origin and COEP require-corp or credentialless))", prefixCache: true });
      expect(first.modelInfo!.preloaded).toEqual([expect.objectContaining({ tokens: 101, cachedTokens: 0 })]);
      expect(first.modelInfo!.restored).toBeUndefined();
      await first.saveCache();
      await first.destroy();
      const second = await Engine.load(source, { kvBudgetBytes: 2 << 20, preload: { promptIds: system }, backend });
      expect(second.modelInfo!.restored).toMatchObject({ pages: 7, tokens: 101 });
      expect(second.modelInfo!.preloaded).toEqual([expect.objectContaining({ tokens: 101, cachedTokens: 101 })]);
      const off = await Engine.load(source, { kvBudgetBytes: 2 << 20, restoreCache: false, prefixCache: false, backend });
      expect(off.modelInfo).toMatchObject({ prefixCache: false });
      expect((await run(second, request)).ids).toEqual((await run(off, request)).ids);
      await Promise.all([second.destroy(), off.destroy()]);
    });
  });
}
