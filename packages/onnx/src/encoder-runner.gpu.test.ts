// Embedding models on onnxruntime-web in headless Chromium: seeded tiny encoders of both families, loaded with
// loadOnnxEncoder on 'onnx-wasm' (ORT's wasm build: where WebGPU is missing) and on 'onnx-webgpu' (ORT's JSPI build and
// its WebGPU EP, here over SwiftShader), match the CPU reference (reference/bert.ts) on a ragged pass, and each sequence
// alone gives the same vector. The Node tier (encoder-runner.test.ts) covers the rest on the same wasm build;
// packages/cli/node/embed-onnx-llamacpp.test.ts holds the graphs against llama.cpp on onnxruntime-node.
import { expect, test } from 'vitest';
import { encodeReference } from '@intab/model/reference';
import { loadOnnxEncoder } from './load.ts';
import { TINY_BERT, TINY_NOMIC, cosine, maxAbsDiff, randomEncoder, raggedInputs } from './test-encoder.ts';

const CASES = [
  ['onnx-wasm', TINY_BERT],
  ['onnx-wasm', { ...TINY_NOMIC, pooling: 'cls' as const }],
  ['onnx-webgpu', { ...TINY_NOMIC, pooling: 'last' as const }],
] as const;

for (const [backend, config] of CASES) {
  test(`${config.arch} (${config.pooling} pooling) on '${backend}' in Chromium: the reference's vectors, batched = one by one`, async () => {
    const { files, weights } = randomEncoder(config, 21);
    const { runner, runs } = await loadOnnxEncoder(files, { backend });
    expect(runs).toMatchObject({ runtime: 'onnxruntime-web', provider: backend === 'onnx-wasm' ? 'wasm' : 'webgpu' });
    const seqs = raggedInputs(config, [9, 1, 40, 13, 13, 77, 3, 25]);
    const ref = encodeReference(weights, seqs).vectors;
    const batched = await runner.encode(seqs);
    batched.forEach((v, i) => {
      expect(maxAbsDiff(v, ref[i]), `sequence ${i}`).toBeLessThan(1e-5);
      expect(cosine(v, ref[i])).toBeGreaterThan(0.99999);
    });
    for (const [i, s] of seqs.entries()) expect(maxAbsDiff((await runner.encode([s]))[0], batched[i]), `sequence ${i} alone`).toBeLessThan(1e-5);
    runner.destroy();
  });
}
