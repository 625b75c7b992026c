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
