// Embedding models on onnxruntime-web's wasm build in Node (the browser's 'onnx-wasm' code path): seeded tiny encoders
// of both families (bert: positions, token types, biases, erf GELU; nomic-bert: RoPE, SwiGLU, no biases) and every
// pooling (mean, [CLS], last) with and without L2 normalisation match the CPU reference (reference/bert.ts) on ragged
// batches; a pass's vectors are the same batched as one by one; the three ways of writing attention agree; q8_0 and
// q4_0 checkpoints are dequantized exactly; planRuns cuts passes as its cost model says; bad input is refused with
// typed errors; the unpooled graph (last_hidden_state, token_type_ids: transformers.js's layout) pools to the same
// vectors. packages/cli/src/embed-onnx-llamacpp.test.ts holds the same graphs against llama.cpp on
// onnxruntime-node.

import { describe, expect, test } from 'vitest';
import { IntabModelError, type EncoderConfig, type EncoderFiles, type TensorInfo } from '@intab/model';
import { encodeReference } from '@intab/model/reference';
import { ModelMismatchError } from '@intab/model';
import { buildEncoderGraph, ENCODER_GRAPH_IO, type EncoderAttention } from './encoder-graph.ts';
import { planRuns, runCostModel, MAX_SCORES_PER_RUN } from './encoder-runner.ts';
import { createSession } from './session.ts';
import { loadOnnxEncoder } from './load.ts';
import { tensorWeights } from './llama-graph.ts';
import { TINY_BERT, TINY_NOMIC, cosine, maxAbsDiff, randomEncoder, raggedInputs } from './test-encoder.ts';

/** Lengths from 1 token to the model's context, unsorted, with repeats. */
const LENGTHS = [7, 1, 33, 12, 12, 64, 2, 19, 45, 5, 28, 96];

/** Each vector within `tol` of the reference's, value by value (and cosine ≥ 1 − tol). */
function expectVectors(actual: Float32Array[], expected: Float32Array[], tol: number, label: string): void {
  expect(actual.length, label).toBe(expected.length);
  actual.forEach((v, i) => {
    expect(v.length, `${label} [${i}]`).toBe(expected[i].length);
    const scale = Math.max(1, ...Array.from(expected[i], Math.abs));
    expect(maxAbsDiff(v, expected[i]) / scale, `${label} [${i}]: max |Δ|`).toBeLessThan(tol);
    expect(cosine(v, expected[i]), `${label} [${i}]: cosine`).toBeGreaterThan(1 - tol);
  });
}

describe('encoder graphs on ORT wasm match the CPU reference', () => {
  const cases: [string, EncoderConfig][] = [
    ['bert, mean, normalized', TINY_BERT],
    ['bert, cls, not normalized', { ...TINY_BERT, pooling: 'cls', normalize: false }],
    ['nomic-bert, mean, normalized', TINY_NOMIC],
    ['nomic-bert, last, not normalized', { ...TINY_NOMIC, pooling: 'last', normalize: false }],
  ];
  for (const [name, config] of cases) {
    test(`${name}: a ragged pass, and each sequence alone`, async () => {
      const { files, weights } = randomEncoder(config, 11);
      const { runner, runs, weightBytes } = await loadOnnxEncoder(files, { backend: 'onnx-wasm' });
      expect(runs).toMatchObject({ runtime: 'onnxruntime-web', provider: 'wasm' });
      // f32 weights (less the token-type rows no token uses), with RoPE's tables and the graph's constants.
      const f32Bytes = [...files.tensors.values()].reduce((n, t) => n + t.byteLength, 0) - config.typeVocab * config.hidden * 4;
      expect(weightBytes).toBeGreaterThan(f32Bytes);
      expect(weightBytes).toBeLessThan(f32Bytes * 1.06);
      expect(runner.facts).toMatchObject({ arch: config.arch, dimensions: config.hidden, pooling: config.pooling, normalized: config.normalize });
      const seqs = raggedInputs(config, LENGTHS.map((n) => Math.min(n, config.maxPositions)));
      const ref = encodeReference(weights, seqs).vectors;
      const batched = await runner.encode(seqs);
      expect(runner.runs).toBeGreaterThan(1); // the planner cut the ragged pass
      expectVectors(batched, ref, 1e-5, 'batched vs reference');
      const alone: Float32Array[] = [];
      for (const s of seqs) alone.push(...(await runner.encode([s])));
      expectVectors(alone, batched, 1e-5, 'one by one vs batched');
      if (config.normalize) for (const v of batched) expect(Math.hypot(...v)).toBeCloseTo(1, 5);
      runner.destroy();
      runner.destroy(); // idempotent
      await expect(runner.encode([[1]])).rejects.toThrow(/destroyed/);
    });
  }

  test("attention written as 'op', 'mha' and 'matmul': the same vectors, in one padded run", async () => {
    for (const config of [TINY_BERT, TINY_NOMIC]) {
      const { files, weights } = randomEncoder(config, 12);
      const seqs = raggedInputs(config, [9, 30, 3, 17]);
      const T = 30;
      const ids = new BigInt64Array(seqs.length * T);
      const mask = new BigInt64Array(seqs.length * T);
      seqs.forEach((s, b) => s.forEach((id, i) => ((ids[b * T + i] = BigInt(id)), (mask[b * T + i] = 1n))));
      const ref = encodeReference(weights, seqs).vectors;
      for (const attention of ['op', 'mha', 'matmul'] as EncoderAttention[]) {
        const graph = await buildEncoderGraph(config, tensorWeights(files.tensors), { attention });
        const { ort, session } = await createSession(graph.model, { backend: 'onnx-wasm' });
        const io = ENCODER_GRAPH_IO;
        const out = await session.run({ [io.inputIds]: new ort.Tensor('int64', ids, [seqs.length, T]), [io.attentionMask]: new ort.Tensor('int64', mask, [seqs.length, T]) });
        expect(out[io.embeddings].dims).toEqual([seqs.length, config.hidden]);
        const y = out[io.embeddings].data as Float32Array;
        expectVectors(seqs.map((_, b) => y.slice(b * config.hidden, (b + 1) * config.hidden)), ref, 1e-5, `${config.arch} ${attention}`);
        await session.release();
      }
    }
  });

  test("output 'last_hidden_state': (B, T, C) rows whose masked mean is the reference's vector, token types an input", async () => {
    for (const config of [TINY_BERT, TINY_NOMIC]) {
      const { files, weights } = randomEncoder(config, 15);
      const seqs = raggedInputs(config, [9, 30, 3]);
      const [B, T, C] = [seqs.length, 30, config.hidden];
      const ids = new BigInt64Array(B * T);
      const mask = new BigInt64Array(B * T);
      seqs.forEach((s, b) => s.forEach((id, i) => ((ids[b * T + i] = BigInt(id)), (mask[b * T + i] = 1n))));
      const graph = await buildEncoderGraph(config, tensorWeights(files.tensors), { output: 'last_hidden_state' });
      const { ort, session } = await createSession(graph.model, { backend: 'onnx-wasm' });
      const io = ENCODER_GRAPH_IO;
      expect(session.inputNames).toEqual([io.inputIds, io.attentionMask, io.tokenTypeIds]); // both tiny models have token types
      expect(session.outputNames).toEqual([io.lastHiddenState]);
      const run = async (type: bigint) => {
        const feeds = { [io.inputIds]: new ort.Tensor('int64', ids, [B, T]), [io.attentionMask]: new ort.Tensor('int64', mask, [B, T]), [io.tokenTypeIds]: new ort.Tensor('int64', new BigInt64Array(B * T).fill(type), [B, T]) };
        const out = (await session.run(feeds))[io.lastHiddenState];
        expect(out.dims).toEqual([B, T, C]);
        const x = out.data as Float32Array;
        // Mean over each row's tokens, then L2 (the tiny models pool by mean and normalise): transformers.js's pooling.
        return seqs.map((s, b) => {
          const v = new Float32Array(C);
          for (let t = 0; t < s.length; t++) for (let j = 0; j < C; j++) v[j] += x[(b * T + t) * C + j] / s.length;
          const n = Math.hypot(...v);
          return v.map((e) => e / n);
        });
      };
      const ref = encodeReference(weights, seqs).vectors;
      expectVectors(await run(0n), ref, 1e-5, `${config.arch} type 0`);
      // Type 1's row is a different row: the input is read, not ignored.
      const other = await run(1n);
      expect(Math.min(...other.map((v, i) => cosine(v, ref[i])))).toBeLessThan(0.9999);
      await session.release();
    }
  });

  test('q8_0 and q4_0 checkpoints: dequantized in the graph, the reference on the same values', async () => {
    for (const [config, dtype] of [[TINY_BERT, 'q8_0'], [TINY_NOMIC, 'q4_0']] as const) {
      const { files, weights } = randomEncoder(config, 13, dtype);
      expect(files.tensors.get('blk.0.attn_q.weight')!.dtype).toBe(dtype);
      const { runner } = await loadOnnxEncoder(files, { backend: 'onnx-wasm' });
      const seqs = raggedInputs(config, [5, 40, 17]);
      expectVectors(await runner.encode(seqs), encodeReference(weights, seqs).vectors, 1e-5, dtype);
      runner.destroy();
    }
  });

  test('a position table longer than the context (as Hugging Face folders may have) is cut to it', async () => {
    const { files, weights } = randomEncoder(TINY_BERT, 14);
    const t = files.tensors.get('position_embd.weight')!;
    const extra = new Uint8Array(t.byteLength + 5 * TINY_BERT.hidden * 4);
    extra.set(await t.source.read(t.offset, t.byteLength));
    extra.fill(0x7f, t.byteLength); // rows the graph must never read (3.4e38 each)
    const longer: TensorInfo = { ...t, shape: [TINY_BERT.maxPositions + 5, TINY_BERT.hidden], source: { ...t.source, size: extra.byteLength, read: async (o, n) => extra.slice(o, o + n) }, byteLength: extra.byteLength };
    const files2: EncoderFiles = { config: TINY_BERT, tensors: new Map([...files.tensors, ['position_embd.weight', longer]]) };
    const { runner } = await loadOnnxEncoder(files2, { backend: 'onnx-wasm' });
    const seqs = raggedInputs(TINY_BERT, [TINY_BERT.maxPositions, 3]);
    expectVectors(await runner.encode(seqs), encodeReference(weights, seqs).vectors, 1e-5, 'longer table');
    runner.destroy();
  });
});

describe('loadOnnxEncoder', () => {
  test('reports progress in bytes, and a missing tensor or an aborted signal stops it', async () => {
    const { files } = randomEncoder(TINY_NOMIC, 15);
    const total = [...files.tensors.values()].reduce((n, t) => n + t.byteLength, 0);
    const seen: number[] = [];
    const { runner } = await loadOnnxEncoder(files, { backend: 'onnx-wasm', onProgress: (p) => (expect(p.total).toBe(total), seen.push(p.loaded)) });
    expect(seen.at(-1)).toBe(total);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    runner.destroy();

    const missing = new Map(files.tensors);
    missing.delete('blk.1.ffn_gate.weight');
    await expect(loadOnnxEncoder({ config: TINY_NOMIC, tensors: missing }, { backend: 'onnx-wasm' })).rejects.toThrow(ModelMismatchError);
    await expect(loadOnnxEncoder(files, { backend: 'onnx-wasm', signal: AbortSignal.abort() })).rejects.toMatchObject({ name: 'AbortError' });
  });

  test('bad passes: typed errors that say what to do; an empty pass is empty', async () => {
    const { files } = randomEncoder(TINY_BERT, 16);
    const { runner } = await loadOnnxEncoder(files, { backend: 'onnx-wasm', maxTokensPerPass: 100, maxSequencesPerPass: 4 });
    expect(await runner.encode([])).toEqual([]);
    await expect(runner.encode([[1, 2], []])).rejects.toThrow(/sequence 1 has 0 tokens; each needs 1\.\.96/);
    await expect(runner.encode([new Array(97).fill(1)])).rejects.toThrow(/has 97 tokens; each needs 1\.\.96 .*truncate it/);
    await expect(runner.encode([[1, 300]])).rejects.toThrow(/token 1 is id 300; ids are 0\.\.299/);
    await expect(runner.encode([[1, 2.5]])).rejects.toThrow(IntabModelError);
    await expect(runner.encode([[1], [1], [1], [1], [1]])).rejects.toThrow(/5 sequences in one pass; at most 4/);
    await expect(runner.encode([new Array(60).fill(1), new Array(60).fill(2)])).rejects.toThrow(/120 tokens in one pass; at most 100/);
    // The runner is still usable.
    expect((await runner.encode([[1, 2, 3]]))[0]).toHaveLength(TINY_BERT.hidden);
    runner.destroy();
  });
});

describe('planRuns', () => {
  const m = runCostModel({ ...TINY_BERT, hidden: 384, ffn: 1536, heads: 12 }, 2048);

  test('every sequence once, sorted by length within and across runs, within the bounds', () => {
    const lengths = [30, 512, 4, 31, 29, 200, 7, 512, 33, 1, 150, 30, 512, 512, 512, 512];
    const runs = planRuns(lengths, m);
    expect(runs.flat().sort((a, b) => a - b)).toEqual(lengths.map((_, i) => i));
    const sorted = runs.flat().map((i) => lengths[i]);
    expect(sorted).toEqual([...sorted].sort((a, b) => a - b));
    for (const run of runs) {
      const T = Math.max(...run.map((i) => lengths[i]));
      expect(run.length * T).toBeLessThanOrEqual(2048);
      expect(run.length * 12 * T * T).toBeLessThanOrEqual(MAX_SCORES_PER_RUN);
    }
    // Six of 512: four fill a run's 2048 tokens, so two runs.
    expect(runs.filter((r) => r.some((i) => lengths[i] === 512))).toHaveLength(2);
    // With more room per run, the scores bound cuts: at most 5 of 512 (5·12·512² ≤ 2^24 < 6·12·512²).
    expect(Math.max(...planRuns(Array(12).fill(512), runCostModel({ ...TINY_BERT, hidden: 384, ffn: 1536, heads: 12 }, 1e6)).map((r) => r.length))).toBe(5);
  });

  test('similar lengths share a run; far apart ones do not; a lone sequence past the bounds still runs', () => {
    expect(planRuns(Array(32).fill(30), m)).toEqual([Array.from({ length: 32 }, (_, i) => i)]);
    expect(planRuns([30, 28, 31, 29], m)).toEqual([[1, 3, 0, 2]]);
    expect(planRuns([4, 300], m)).toEqual([[0], [1]]);
    expect(planRuns([5000], m)).toEqual([[0]]);
    expect(planRuns([], m)).toEqual([]);
  });
});
