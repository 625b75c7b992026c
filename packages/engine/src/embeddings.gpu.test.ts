// Embeddings on the engine in headless Chromium, against llama.cpp: the browser tier's global setup
// (scripts/embed-oracle-setup.mjs) wrote a seeded all-MiniLM-L6-shaped GGUF (2 layers, f32, WordPiece vocabulary
// inside), serves it on a local hub, and gave llama.cpp's (node-llama-cpp, native) ids and vectors of the shared
// inputs. Engine.load downloads the file by URL and embeds on intab's WebGPU kernels (arch/bert.ts), and on
// onnxruntime-web's wasm (the encoder graph @intab/onnx writes; what 'auto' picks on this software adapter): every
// vector within cosine 0.9999 of llama.cpp's, unit length, the 20 inputs in one request (packed passes) the same as one
// by one; the engine says what it loaded (ModelInfo.embedding) and refuses to generate with it.
import { afterAll, describe, expect, inject, test } from 'vitest';
import { EMBED_INPUTS, cosine } from '@intab/testing/embed-inputs';
import { Engine } from './engine.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    embedHubUrl: string;
    embedOracle: { ids: number[][]; vectors: number[][] };
    decoderEmbedOracle: Record<string, { ids: number[][]; vectors: number[][] }>;
  }
}

const MINILM = { kind: 'url', url: `${inject('embedHubUrl')}/test/minilm/resolve/main/all-minilm-l6.gguf` } as const;
const oracle = inject('embedOracle');

const engines: Engine[] = [];
afterAll(async () => {
  for (const e of engines) await e.destroy();
});

describe('embeddings on WebGPU against llama.cpp', () => {
  test("an all-MiniLM-L6-shaped GGUF by URL: llama.cpp's vectors within cosine 0.9999, batched = one by one, the model described", async () => {
    const engine = await Engine.load(MINILM, { backend: 'webgpu' });
    engines.push(engine);
    const info = engine.modelInfo!;
    expect(info).toMatchObject({ backend: { name: 'webgpu' }, arch: 'bert', layers: 2, hidden: 384, contextLength: 512, kvPages: 0, embedding: { dimensions: 384, pooling: 'mean', normalized: true, matryoshka: false } });
    const all = await engine.embed({ input: [...EMBED_INPUTS] });
    expect(all.tokens).toEqual(oracle.ids.map((ids) => ids.length));
    expect(all.promptTokens).toBe(oracle.ids.flat().length);
    const cos = all.embeddings.map((v, i) => cosine(v, oracle.vectors[i]));
    console.log(JSON.stringify({ test: 'embeddings-webgpu', min_cosine: Math.min(...cos), ms: Math.round(all.ms) }));
    for (const c of cos) expect(c).toBeGreaterThanOrEqual(0.9999);
    for (const v of all.embeddings) expect(Math.hypot(...v)).toBeCloseTo(1, 5);
    // The texts' vectors are apart, so the bar says something: no input is as close to another's as to its own.
    expect(cosine(all.embeddings[0], oracle.vectors[1])).toBeLessThan(0.999);
    // Ids in, the same vectors; one by one, the same vectors as packed together.
    const byIds = await engine.embed({ input: oracle.ids.slice(0, 3) });
    for (let i = 0; i < 3; i++) expect(cosine(byIds.embeddings[i], all.embeddings[i])).toBeGreaterThan(0.999999);
    for (const i of [0, 7, 19]) {
      const [alone] = (await engine.embed({ input: EMBED_INPUTS[i] })).embeddings;
      for (let k = 0; k < alone.length; k++) expect(Math.abs(alone[k] - all.embeddings[i][k])).toBeLessThan(1e-5);
    }
    await expect(engine.start({ prompt: 'hello' })).rejects.toMatchObject({ name: 'ModelKindError', kind: 'embedding' });
  });

  test("onnx-wasm (and 'auto' on this software adapter): the same file, llama.cpp's vectors within cosine 0.9999", async () => {
    const engine = await Engine.load(MINILM, { backend: 'auto' });
    engines.push(engine);
    expect(engine.modelInfo!.backend.name).toBe('onnx-wasm');
    expect(engine.modelInfo!.backend.reason).toMatch(/software/);
    const all = await engine.embed({ input: [...EMBED_INPUTS] });
    const cos = all.embeddings.map((v, i) => cosine(v, oracle.vectors[i]));
    console.log(JSON.stringify({ test: 'embeddings-onnx-wasm', min_cosine: Math.min(...cos), ms: Math.round(all.ms) }));
    for (const c of cos) expect(c).toBeGreaterThanOrEqual(0.9999);
    const [alone] = (await engine.embed({ input: EMBED_INPUTS[13] })).embeddings;
    expect(cosine(alone, all.embeddings[13])).toBeGreaterThan(0.999999);
  });
});

describe('a lost device under an embedding model (WebGPU)', () => {
  test('the call in flight ends with DeviceLostError; the encoder is loaded again on a new device by itself, and a call sent meanwhile waits and gets the same vectors', async () => {
    const engine = await Engine.load(MINILM, { backend: 'webgpu' });
    engines.push(engine);
    const [before] = (await engine.embed({ input: EMBED_INPUTS[4] })).embeddings;
    const inFlight = engine.embed({ input: Array.from({ length: 64 }, (_, i) => EMBED_INPUTS[i % 20]) });
    // The device under the engine, destroyed as a driver reset would take it (the engine did not ask for it).
    (engine as unknown as { gpu: { device: GPUDevice } }).gpu.device.destroy();
    const err = await inFlight.catch((x: unknown) => x);
    expect(err).toMatchObject({ name: 'DeviceLostError' });
    expect((err as Error).message).toMatch(/reloading the model on a new device by itself/);
    const during = engine.embed({ input: EMBED_INPUTS[4] });
    let s = await engine.status(0);
    while (s.state !== 'ready' || s.recoveries < 1) s = await engine.status(s.version);
    expect(s).toMatchObject({ losses: 1, recoveries: 1 });
    const [after] = (await during).embeddings;
    expect(cosine(after, before)).toBeGreaterThan(0.999999);
    expect(cosine(after, oracle.vectors[4])).toBeGreaterThanOrEqual(0.9999);
  });
});

describe('decoders trained to embed (Qwen3-Embedding, EmbeddingGemma) against llama.cpp', () => {
  const decoderOracle = inject('decoderEmbedOracle');
  for (const like of ['qwen3-embedding-0.6b', 'embeddinggemma-300m']) {
    for (const backend of ['webgpu', 'auto'] as const) {
      test(`${like}-shaped (2 layers, widths 64, its real tokenizer) on ${backend}: llama.cpp's ids and vectors within cosine 0.9999, batched = one by one`, async () => {
        const source = { kind: 'url', url: `${inject('embedHubUrl')}/test/decoder-embed/resolve/main/${like}.gguf` } as const;
        const engine = await Engine.load(source, { backend });
        engines.push(engine);
        const info = engine.modelInfo!;
        expect(info.backend.name).toBe(backend === 'webgpu' ? 'webgpu' : 'onnx-wasm');
        expect(info.embedding).toMatchObject({ pooling: like.startsWith('qwen3') ? 'last' : 'mean', normalized: true, dimensions: 64 });
        const oracle = decoderOracle[like];
        const all = await engine.embed({ input: [...EMBED_INPUTS] });
        expect(all.tokens).toEqual(oracle.ids.map((ids) => ids.length));
        const cos = all.embeddings.map((v, i) => cosine(v, oracle.vectors[i]));
        console.log(JSON.stringify({ test: `decoder-embed-${like}-${info.backend.name}`, min_cosine: Math.min(...cos), ms: Math.round(all.ms) }));
        for (const c of cos) expect(c).toBeGreaterThanOrEqual(0.9999);
        expect(cosine(all.embeddings[0], oracle.vectors[1])).toBeLessThan(0.999);
        const [alone] = (await engine.embed({ input: EMBED_INPUTS[13] })).embeddings;
        expect(cosine(alone, all.embeddings[13])).toBeGreaterThan(0.999999);
        // Ids in: the tokenizer's (EOS last) give the same vector.
        const [byIds] = (await engine.embed({ input: [oracle.ids[13]] })).embeddings;
        expect(cosine(byIds, alone)).toBeGreaterThan(0.999999);
      });
    }
  }
});
