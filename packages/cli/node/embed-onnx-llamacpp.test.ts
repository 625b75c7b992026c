// Embedding models on onnxruntime-node's CPU provider (the Node runtime's 'onnx-wasm', and 'auto' where no hardware GPU
// is found) against llama.cpp (node-llama-cpp) and the CPU reference: `make-model --like all-minilm-l6 | nomic-embed-v1.5
// --layers 2` GGUFs (f32, and q8_0), @intab/onnx's encoder graph written from them (q8_0 dequantized to f32), the 20
// texts of @intab/testing/embed-inputs in one pass: every vector within cosine 0.9999 of llama.cpp's (0.999 in q8_0,
// where llama.cpp rounds activations to 8 bits too), within 1e-5 of the reference's on the shorter texts, and the same
// (within 1e-5) encoded one by one. The pass is cut into ORT runs of similar lengths (planRuns).
// Throughput is `intab bench embed`'s (bench-embed.ts), not a test's.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { dequantize, type WeightDtype } from '@intab/gpu';
import { openEncoderGguf, openTokenizer, pathSource, type EncoderFiles } from '@intab/model';
import { encodeReference, loadEncoderWeights } from '@intab/model/reference';
import { loadOnnxEncoder, type OrtRuntime } from '@intab/onnx';
import { EMBED_INPUTS as INPUTS, cosine } from '@intab/testing/embed-inputs';
import { writeSyntheticModel } from '../src/make-model.ts';
import { llamaCppEmbeddings } from '../src/test-llamacpp.ts';
import { nodeOrt } from './ort.ts';

const dir = mkdtempSync(join(tmpdir(), 'intab-embed-onnx-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const maxAbsDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => Array.from(a).reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);

/** The reference's vectors for some of the texts (the reference is plain loops: only the shorter texts, to stay quick). */
async function reference(files: EncoderFiles, ids: number[][]): Promise<Float32Array[]> {
  const values = new Map<string, Float32Array>();
  for (const [name, t] of files.tensors) {
    const [rows, cols] = t.shape.length === 1 ? [1, t.shape[0]] : t.shape;
    values.set(name, dequantize(t.dtype as WeightDtype, await t.source.read(t.offset, t.byteLength), rows, cols));
  }
  return encodeReference(loadEncoderWeights(files.config, (n) => values.get(n)), ids).vectors;
}

const CASES: readonly { like: string; dtype: WeightDtype; min: number }[] = [
  { like: 'all-minilm-l6', dtype: 'f32', min: 0.9999 },
  { like: 'all-minilm-l6', dtype: 'q8_0', min: 0.999 },
  { like: 'nomic-embed-v1.5', dtype: 'f32', min: 0.9999 },
];

describe('embedding models on onnxruntime-node: as llama.cpp embeds them', () => {
  const runtime = nodeOrt();
  for (const c of CASES) {
    test(`make-model --like ${c.like} --dtype ${c.dtype} --layers 2: cosine ≥ ${c.min} with llama.cpp, the reference's vectors, batched = one by one`, { timeout: 120_000 }, async () => {
      const out = join(dir, `${c.like}-${c.dtype}.gguf`);
      writeSyntheticModel({ like: c.like, dtype: c.dtype, out, seed: 5, layers: 2 });
      const theirs = await llamaCppEmbeddings(out, INPUTS);
      const files = await openEncoderGguf(await pathSource(out));
      const tokenizer = openTokenizer(files)!;
      const ids = INPUTS.map((t) => tokenizer.encode(t));
      expect(ids).toEqual(theirs.ids);

      const { runner, runs } = await loadOnnxEncoder(files, { backend: 'onnx-wasm', runtime });
      expect(runs).toMatchObject({ runtime: runtime.name, provider: 'cpu' });
      const batched = await runner.encode(ids);
      const cos = batched.map((v, i) => cosine(v, theirs.vectors[i]));
      // The shortest texts (up to ~30 tokens) through the reference; every text alone.
      const short = ids.map((s, i) => [s.length, i]).sort((a, b) => a[0] - b[0]).slice(0, 8).map(([, i]) => i);
      const ref = await reference(files, short.map((i) => ids[i]));
      const refDiff = Math.max(...short.map((i, k) => maxAbsDiff(batched[i], ref[k])));
      const alone = ids.map((_, i) => i);
      let aloneDiff = 0;
      for (const i of alone) aloneDiff = Math.max(aloneDiff, maxAbsDiff((await runner.encode([ids[i]]))[0], batched[i]));
      // So that the bar is not met by accident: different texts are far apart.
      let apart = -1;
      for (let i = 0; i < ids.length; i++) for (let j = 0; j < ids.length; j++) if (i !== j) apart = Math.max(apart, cosine(batched[i], theirs.vectors[j]));
      console.log(JSON.stringify({ test: 'embed-onnx-llamacpp', like: c.like, dtype: c.dtype, layers: 2, runtime: runtime.name, threads: runtime.threads, ort_runs: runner.runs - alone.length, min_cosine_llamacpp: Math.min(...cos), max_cosine_between_texts: apart, max_diff_reference: refDiff, max_diff_alone: aloneDiff }));
      runner.destroy();
      rmSync(out, { force: true });

      for (const [i, v] of cos.entries()) expect(v, `input ${i}: ${JSON.stringify(INPUTS[i].slice(0, 40))}`).toBeGreaterThanOrEqual(c.min);
      for (const v of batched) expect(Math.hypot(...v)).toBeCloseTo(1, 5);
      expect(apart).toBeLessThan(0.99);
      expect(refDiff).toBeLessThan(1e-5);
      expect(aloneDiff).toBeLessThan(1e-5);
    });
  }
});
