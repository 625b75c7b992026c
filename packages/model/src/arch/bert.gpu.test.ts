// The WebGPU encoder (arch/bert.ts) on seeded tiny models of both families against a forward composed of the kernels'
// float64 CPU twins (@intab/gpu/reference): bert (separate q/k/v with biases, absolute positions, token types, erf
// GELU, mean pooling) and nomic-bert (fused q|k|v, RoPE, SwiGLU, no biases, CLS pooling), batched with ragged lengths
// and one by one (the same vectors either way), q8_0 on load, and bad inputs. The whole encoder against llama.cpp is
// packages/engine/src/embeddings.gpu.test.ts (through the engine, on a GGUF llama.cpp embedded in the tier's setup).
import { describe, expect, test } from 'vitest';
import { dequantize, quantize, ropeInvFreq } from '@intab/gpu';
import { encoderAttention, gated, geluErf, layernorm, matmul, packedStarts, poolSequences, ropeEncoder, silu } from '@intab/gpu/reference';
import { expectClose, randomF32, testGpu } from '@intab/testing/gpu';
import { createBertRunner } from './bert.ts';
import type { EncoderConfig } from '../encoder-config.ts';
import type { TensorInfo } from '../types.ts';
import { bytesSource } from '../source.ts';

const BERT: EncoderConfig = {
  arch: 'bert', hidden: 32, layers: 2, heads: 4, headDim: 8, ffn: 64, vocab: 50, eps: 1e-12, maxPositions: 40, typeVocab: 2,
  absolutePositions: true, rope: null, activation: 'gelu', projectionBias: true, pooling: 'mean', normalize: true,
};
const NOMIC: EncoderConfig = {
  arch: 'nomic-bert', hidden: 64, layers: 2, heads: 2, headDim: 32, ffn: 96, vocab: 60, eps: 1e-12, maxPositions: 64, typeVocab: 2,
  absolutePositions: false, rope: { theta: 1000, rotaryDim: 32 }, activation: 'swiglu', projectionBias: false, pooling: 'cls', normalize: true,
};

/** Seeded f32 tensors under llama.cpp's GGUF names (nomic-bert with one attn_qkv, bert with q, k and v). */
function randomModel(c: EncoderConfig, seed: number): Map<string, Float32Array> {
  const { hidden: C, ffn: F } = c;
  const t = new Map<string, Float32Array>();
  let s = seed;
  const add = (name: string, n: number, scale = 0.2, offset = 0) => t.set(name, randomF32(n, ++s, scale).map((v) => v + offset));
  add('token_embd.weight', c.vocab * C, 1);
  if (c.absolutePositions) add('position_embd.weight', c.maxPositions * C, 0.5);
  add('token_types.weight', c.typeVocab * C, 0.5);
  add('token_embd_norm.weight', C, 0.1, 1);
  add('token_embd_norm.bias', C, 0.1);
  for (let i = 0; i < c.layers; i++) {
    const b = `blk.${i}.`;
    if (c.arch === 'nomic-bert') add(`${b}attn_qkv.weight`, 3 * C * C, 0.3);
    else for (const p of ['q', 'k', 'v']) (add(`${b}attn_${p}.weight`, C * C, 0.3), add(`${b}attn_${p}.bias`, C, 0.1));
    add(`${b}attn_output.weight`, C * C);
    if (c.projectionBias) add(`${b}attn_output.bias`, C, 0.1);
    add(`${b}attn_output_norm.weight`, C, 0.1, 1);
    add(`${b}attn_output_norm.bias`, C, 0.1);
    if (c.activation === 'swiglu') add(`${b}ffn_gate.weight`, F * C);
    add(`${b}ffn_up.weight`, F * C);
    if (c.projectionBias) add(`${b}ffn_up.bias`, F, 0.1);
    add(`${b}ffn_down.weight`, C * F, 0.15);
    if (c.projectionBias) add(`${b}ffn_down.bias`, C, 0.1);
    add(`${b}layer_output_norm.weight`, C, 0.1, 1);
    add(`${b}layer_output_norm.bias`, C, 0.1);
  }
  return t;
}

/** The tensors as a loader gives them: f32, row-major shapes, each in an in-memory file. */
function tensorTable(c: EncoderConfig, t: Map<string, Float32Array>): Map<string, TensorInfo> {
  const { hidden: C, ffn: F } = c;
  const shapeOf = (name: string, n: number): number[] => {
    if (name.endsWith('.bias') || name.endsWith('_norm.weight')) return [n];
    if (name === 'token_embd.weight') return [c.vocab, C];
    if (name === 'position_embd.weight') return [c.maxPositions, C];
    if (name === 'token_types.weight') return [c.typeVocab, C];
    if (name.endsWith('ffn_down.weight')) return [C, F];
    return [n / C, C];
  };
  return new Map([...t].map(([name, v]) => {
    const bytes = new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
    return [name, { name, dtype: 'f32', shape: shapeOf(name, v.length), source: bytesSource(name, bytes), offset: 0, byteLength: bytes.byteLength } as TensorInfo];
  }));
}

/** The encoder composed of the kernels' CPU twins: one vector per sequence. */
function cpuEncoder(c: EncoderConfig, t: Map<string, Float32Array>, seqs: number[][]): Float32Array[] {
  const { hidden: C, ffn: F, heads: H, headDim: D, eps } = c;
  const starts = packedStarts(seqs.map((x) => x.length));
  const T = starts[seqs.length];
  const w = (name: string) => t.get(name)!;
  const mm = (name: string, n: number, k: number, x: Float32Array, bias?: string, residual?: Float32Array) =>
    matmul('f32', new Uint8Array(w(name).buffer), n, k, x, T, bias && c.projectionBias ? w(bias) : undefined, residual);
  const x = new Float32Array(T * C);
  seqs.forEach((ids, b) => ids.forEach((id, i) => {
    for (let j = 0; j < C; j++) {
      x[(starts[b] + i) * C + j] = w('token_embd.weight')[id * C + j] + w('token_types.weight')[j] + (c.absolutePositions ? w('position_embd.weight')[i * C + j] : 0);
    }
  }));
  let h = layernorm(x, w('token_embd_norm.weight'), w('token_embd_norm.bias'), T, C, eps);
  for (let l = 0; l < c.layers; l++) {
    const b = `blk.${l}.`;
    let qkv: Float32Array;
    if (c.arch === 'nomic-bert') qkv = mm(`${b}attn_qkv.weight`, 3 * C, C, h);
    else {
      const [q, k, v] = ['q', 'k', 'v'].map((p) => mm(`${b}attn_${p}.weight`, C, C, h, `${b}attn_${p}.bias`));
      qkv = new Float32Array(T * 3 * C);
      for (let i = 0; i < T; i++) [q, k, v].forEach((m, j) => qkv.set(m.subarray(i * C, (i + 1) * C), i * 3 * C + j * C));
    }
    if (c.rope) {
      const inv = ropeInvFreq({ headDim: D, rotaryDim: c.rope.rotaryDim, theta: c.rope.theta });
      qkv = Float32Array.from(ropeEncoder(qkv, 3 * C, [{ offset: 0, heads: H }, { offset: C, heads: H }], D, starts, inv, 'neox'));
    }
    const rows = (offset: number) => ({ data: qkv, stride: 3 * C, offset });
    const a = Float32Array.from(encoderAttention(rows(0), rows(C), rows(2 * C), starts, H, H, D));
    const h2 = layernorm(mm(`${b}attn_output.weight`, C, C, a, `${b}attn_output.bias`, h), w(`${b}attn_output_norm.weight`), w(`${b}attn_output_norm.bias`), T, C, eps);
    const f = c.activation === 'swiglu'
      ? gated(silu, mm(`${b}ffn_gate.weight`, F, C, h2), mm(`${b}ffn_up.weight`, F, C, h2), T, F)
      : mm(`${b}ffn_up.weight`, F, C, h2, `${b}ffn_up.bias`).map(geluErf);
    h = layernorm(mm(`${b}ffn_down.weight`, C, F, f, `${b}ffn_down.bias`, h2), w(`${b}layer_output_norm.weight`), w(`${b}layer_output_norm.bias`), T, C, eps);
  }
  const pooled = poolSequences(h, C, starts, c.pooling, c.normalize);
  return seqs.map((_, b) => pooled.subarray(b * C, (b + 1) * C));
}

const cosine = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let [ab, aa, bb] = [0, 0, 0];
  for (let i = 0; i < a.length; i++) (ab += a[i] * b[i], aa += a[i] * a[i], bb += b[i] * b[i]);
  return ab / Math.sqrt(aa * bb);
};

/** Ragged inputs: lengths 1..maxPositions, ids across the vocabulary. */
function inputs(c: EncoderConfig, lengths: number[]): number[][] {
  return lengths.map((n, b) => Array.from({ length: n }, (_, i) => (7 * b + 13 * i + n) % c.vocab));
}

describe.each([['bert', BERT], ['nomic-bert', NOMIC]] as const)('bert runner (%s)', (_, config) => {
  const lengths = [5, 1, config.maxPositions, 17, 2, 9];

  test('batched, ragged: matches the CPU twins, and the same vectors one by one', async () => {
    const gpu = await testGpu();
    const t = randomModel(config, 3);
    const runner = await createBertRunner(gpu, config, tensorTable(config, t), { maxTokensPerPass: 128, maxSequencesPerPass: 8 });
    expect(runner.facts).toMatchObject({ arch: config.arch, dimensions: config.hidden, pooling: config.pooling, normalized: true });
    const seqs = inputs(config, lengths);
    const got = await runner.encode(seqs);
    const want = cpuEncoder(config, t, seqs);
    got.forEach((v, b) => {
      expectClose(v, want[b], { atol: 5e-5, rtol: 1e-3, label: `sequence ${b}` });
      expect(cosine(v, want[b])).toBeGreaterThan(0.99999);
      expect(Math.hypot(...v)).toBeCloseTo(1, 5);
    });
    const single = await Promise.all(seqs.map((s) => runner.encode([s]).then((r) => r[0])));
    single.forEach((v, b) => expectClose(v, got[b], { atol: 1e-6, rtol: 1e-5, label: `sequence ${b} alone` }));
    runner.destroy();
    runner.destroy(); // idempotent
    await expect(runner.encode([[1]])).rejects.toThrow(/destroyed/);
  });

  test('q8_0 on load: the same forward on the q8_0-rounded matrices', async () => {
    const gpu = await testGpu();
    const t = randomModel(config, 4);
    const runner = await createBertRunner(gpu, config, tensorTable(config, t), { maxTokensPerPass: 64, maxSequencesPerPass: 4, quantize: 'q8_0' });
    // What upload quantizes: every matrix streamed as rows (token_embd and the projections); position and type rows are
    // read as f32 vectors.
    const rounded = new Map([...t].map(([name, v]) => {
      if (!/^(token_embd|blk\.\d+\.(attn_(q|k|v|qkv|output)|ffn_(up|gate|down)))\.weight$/.test(name)) return [name, v];
      const k = name.endsWith('ffn_down.weight') ? config.ffn : config.hidden;
      return [name, dequantize('q8_0', quantize('q8_0', v, v.length / k, k), v.length / k, k)];
    }));
    const seqs = inputs(config, [6, 11, 3]);
    const want = cpuEncoder(config, rounded, seqs);
    const exact = cpuEncoder(config, t, seqs);
    (await runner.encode(seqs)).forEach((v, b) => {
      expect(cosine(v, want[b])).toBeGreaterThan(0.99999);
      expect(cosine(v, exact[b])).toBeGreaterThan(0.99);
    });
    runner.destroy();
  });
});

describe('bert runner: inputs it refuses', () => {
  test('empty, too long, too many and out-of-vocabulary inputs, and a missing tensor', async () => {
    const gpu = await testGpu();
    const t = randomModel(BERT, 5);
    const runner = await createBertRunner(gpu, BERT, tensorTable(BERT, t), { maxTokensPerPass: 50, maxSequencesPerPass: 2 });
    expect(await runner.encode([])).toEqual([]);
    await expect(runner.encode([[]])).rejects.toThrow(/1\.\.40/);
    await expect(runner.encode([Array(41).fill(1)])).rejects.toThrow(/context/);
    await expect(runner.encode([[1], [2], [3]])).rejects.toThrow(/maxSequencesPerPass/);
    await expect(runner.encode([Array(30).fill(1), Array(30).fill(1)])).rejects.toThrow(/maxTokensPerPass/);
    await expect(runner.encode([[1, 50]])).rejects.toThrow(/id 50/);
    // the runner still works after refusals
    expect((await runner.encode([[1, 2, 3]]))[0]).toHaveLength(BERT.hidden);
    runner.destroy();
    const missing = tensorTable(BERT, t);
    missing.delete('blk.1.ffn_up.bias');
    await expect(createBertRunner(gpu, BERT, missing)).rejects.toMatchObject({ name: 'ModelMismatchError' });
  });
});
