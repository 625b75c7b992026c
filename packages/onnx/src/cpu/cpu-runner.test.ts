// The CpuRunner (intab's wasm SIMD128 kernels) on small q8_0 / q4_0 GGUFs of three families (llama; qwen3: q/k norms,
// rotate-half RoPE; gemma3: GeGLU, post-norms, a scaled embedding and a sliding window that the prompt outgrows):
// - its logits follow the CPU reference's on the dequantized weights (x is quantized to q8_0 before every matrix, as in
//   llama.cpp, so to a tolerance; cpu-kernels-llamacpp.test.ts holds it to llama.cpp itself);
// - a token's logits do not depend on how the step is put together (one prefill chunk or token by token, alone or
//   batched with other sequences, after a fork, a rewind, pages copied on write or written back by pageIO), bit for
//   bit: what lets the prefix cache give exactly the ids recomputing gives;
// - a step may stop after any layer (self-speculative drafts), and a model the kernels cannot run is refused with why.

import { describe, expect, test } from 'vitest';
import { dequantize, quantize, type WeightDtype } from '@intab/gpu';
import { bytesSource, openGguf, type ModelFiles } from '@intab/model';
import { createReferenceModel } from '@intab/model/reference';
import { syntheticGguf, type SyntheticShape } from '@intab/testing/synthetic';
import { cpuRunnable, loadCpuRunner } from './load-cpu.ts';
import { checkStepInvariance, checkThreadsForward } from './test-cpu-runner.ts';
import type { CpuRunner } from './cpu-runner.ts';

const BASE = { hidden: 64, ffn: 128, layers: 2, heads: 4, kvHeads: 2, headDim: 16, vocab: 384, ropeTheta: 10000, context: 256 };
const SHAPES: Record<string, SyntheticShape> = {
  llama: BASE,
  qwen3: { ...BASE, arch: 'qwen3' },
  gemma3: { ...BASE, heads: 2, kvHeads: 1, headDim: 32, arch: 'gemma3', window: 8, layers: 6 },
};

/** The shape as a GGUF; `qkScale` > 1 sharpens attention, so where a token's K/V sit matters more. */
async function open(shape: SyntheticShape, dtype: WeightDtype, qkScale = 1): Promise<ModelFiles> {
  return openGguf(bytesSource('model.gguf', syntheticGguf(shape, dtype, 5, { qkScale })));
}

async function f32Tensors(model: ModelFiles): Promise<Map<string, Float32Array>> {
  const out = new Map<string, Float32Array>();
  for (const [name, t] of model.tensors) {
    const [rows, cols] = t.shape.length === 1 ? [1, t.shape[0]] : t.shape;
    out.set(name, dequantize(t.dtype as WeightDtype, await t.source.read(t.offset, t.byteLength), rows, cols));
  }
  return out;
}

const GREEDY = { temperature: 0, u: 0 };
const PROMPT = Array.from({ length: 21 }, (_, i) => (i * 37 + 11) % 384);

/** Every row's logits of `tokens` appended to `seq` (a verify entry reads all rows back). */
async function rowsOf(runner: CpuRunner, seq: number, tokens: number[], layers?: number): Promise<Float32Array> {
  const [r] = await runner.step([{ seq, tokens, verify: tokens.map(() => GREEDY) }], { logits: true, layers });
  return r.logits!;
}

/** Each row's relative RMS error of `got` against `want`, (rows, V) each. */
function rowErrors(got: Float32Array, want: Float32Array, V: number): number[] {
  return Array.from({ length: want.length / V }, (_, t) => {
    let err = 0;
    let norm = 0;
    for (let v = t * V; v < (t + 1) * V; v++) {
      err += (got[v] - want[v]) ** 2;
      norm += want[v] ** 2;
    }
    return Math.sqrt(err / norm);
  });
}

const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];

describe('the CpuRunner against the CPU reference (f32 activations: to rounding; llama.cpp is the exact oracle, in the CLI tests)', () => {
  for (const family of Object.keys(SHAPES)) {
    for (const dtype of ['q8_0', 'q4_0'] as const) {
      test(`${family} ${dtype}: every row's logits within the rounding of quantized activations`, async () => {
        const model = await open(SHAPES[family], dtype);
        const { runner } = await loadCpuRunner(model, { kvBudgetBytes: 1 << 20, maxBatch: 8 });
        const ref = createReferenceModel(model.config, ((t) => (n: string) => t.get(n))(await f32Tensors(model)));
        runner.alloc(0);
        const errors = rowErrors(await rowsOf(runner, 0, PROMPT), ref.logitsAll(PROMPT, 0), model.config.vocab);
        expect(median(errors)).toBeLessThan(0.05);
        expect(Math.max(...errors)).toBeLessThan(0.15);
        runner.destroy();
      });
    }
  }

  test('logprobs: the kernel-summed normaliser gives the float64 log-softmax of the logits returned (plain and verify rows)', async () => {
    const model = await open(SHAPES.qwen3, 'q4_0');
    const { runner } = await loadCpuRunner(model, { kvBudgetBytes: 1 << 20, maxBatch: 8 });
    const V = model.config.vocab;
    const logSoftmax = (row: Float32Array, id: number) => {
      const max = Math.max(...row);
      return row[id] - max - Math.log(row.reduce((a, v) => a + Math.exp(v - max), 0));
    };
    runner.alloc(0);
    const [plain] = await runner.step([{ seq: 0, tokens: PROMPT, sampling: { temperature: 0, u: 0, topLogprobs: 3 } }], { logits: true });
    expect(Math.abs(plain.logprob - logSoftmax(plain.logits!, plain.id))).toBeLessThan(1e-5);
    expect(Math.abs(plain.top[1].logprob - logSoftmax(plain.logits!, plain.top[1].id))).toBeLessThan(1e-5);
    const tokens = [plain.id, 5, 6];
    const [verify] = await runner.step([{ seq: 0, tokens, verify: tokens.map(() => GREEDY), rows: true }], { logits: true });
    for (const [i, r] of [...(verify.acceptedRows ?? []), verify].entries()) expect(Math.abs(r.logprob - logSoftmax(verify.logits!.subarray(i * V, (i + 1) * V), r.id))).toBeLessThan(1e-5);
  });

  test('a step that stops after layer 1 gives the reference\'s one-layer logits', async () => {
    const model = await open(SHAPES.llama, 'q8_0');
    const { runner } = await loadCpuRunner(model, { kvBudgetBytes: 1 << 20, maxBatch: 8 });
    const ref = createReferenceModel(model.config, ((t) => (n: string) => t.get(n))(await f32Tensors(model)));
    runner.alloc(0);
    runner.alloc(1);
    const oneLayer = ref.logitsAll(PROMPT.slice(0, 6), 0, 1);
    const V = model.config.vocab;
    expect(Math.max(...rowErrors(await rowsOf(runner, 0, PROMPT.slice(0, 6), 1), oneLayer, V))).toBeLessThan(0.1);
    // The whole model's rows are far from those: the layer count took effect.
    expect(median(rowErrors(await rowsOf(runner, 1, PROMPT.slice(0, 6)), oneLayer, V))).toBeGreaterThan(0.3);
    expect(runner.capabilities.earlyExit).toBe(true);
  });
});

describe('a token\'s logits do not depend on how its step is put together', () => {
  for (const dtype of ['q4_0', 'q8_0'] as const) {
    test(`${dtype}: one prefill chunk, token by token, batched with others, forked, rewound, pages written back: the same bits`, () => checkStepInvariance(dtype));
  }
});

describe('on wasm threads (worker_threads here; end to end in Chromium: packages/cli/src/cpu-threads.test.ts)', () => {
  for (const dtype of ['q4_0', 'q8_0'] as const) {
    test(`${dtype}: 2 and 3 threads give one thread's logits, bit for bit (matrices and attention split)`, { timeout: 60_000 }, async () => {
      expect(await checkThreadsForward(dtype, 2)).toBeGreaterThan(0);
      expect(await checkThreadsForward(dtype, 3)).toBeGreaterThan(0);
    });
  }
});

describe('what the CPU kernels run', () => {
  test('q4_0 / q8_0 layer matrices run as stored; f16 and f32 ones stay on onnxruntime unless asked, then run as q8_0', async () => {
    const q4 = await open(SHAPES.llama, 'q4_0');
    expect(cpuRunnable(q4)).toBeUndefined();
    expect((await loadCpuRunner(q4)).dtypes).toBe('q4_0');
    expect(cpuRunnable(await open(SHAPES.llama, 'f16'))).toMatch(/layer matrices are f16: onnxruntime runs them exactly, and intab's CPU kernels would re-quantize them to q8_0 \(cpuKernels 'intab' asks for that\)/);
    const f32 = await open(SHAPES.llama, 'f32');
    await expect(loadCpuRunner(f32)).rejects.toThrow(/layer matrices are f32/);
    const forced = await loadCpuRunner(f32, { anyFormat: true, kvBudgetBytes: 1 << 20, maxBatch: 8 });
    expect(forced.dtypes).toBe('q8_0 from f32');
    expect(forced.requantized).toHaveLength(2 * 7 + 1); // every layer matrix and the tied head
    const ref = createReferenceModel(f32.config, ((t) => (n: string) => t.get(n))(await f32Tensors(f32)));
    forced.runner.alloc(0);
    expect(median(rowErrors(await rowsOf(forced.runner, 0, PROMPT), ref.logitsAll(PROMPT, 0), f32.config.vocab))).toBeLessThan(0.05);
  });

  test('weights past a wasm heap (4 GiB as the kernels hold them) are refused before a byte is read', async () => {
    const model = await open(SHAPES.llama, 'q4_0');
    const up = model.tensors.get('blk.0.ffn_up.weight')!;
    const tensors = new Map(model.tensors);
    tensors.set('blk.0.ffn_up.weight', { ...up, shape: [262144, 32768], byteLength: 262144 * 32768 * (18 / 32) });
    expect(cpuRunnable({ ...model, tensors })).toMatch(/^its weights \(5\.\d GiB as the kernels hold them\) do not fit a wasm heap's 4 GiB$/);
  });

  test('a head in another format (f16 here, q6_K in real q4_0 files) is re-quantized to q8_0 and said so; the logits stay', async () => {
    const model = await open(SHAPES.qwen3, 'q4_0');
    const f32 = await f32Tensors(model);
    const head = model.tensors.get('token_embd.weight')!;
    const f16 = quantize('f16', f32.get('token_embd.weight')!, head.shape[0], head.shape[1]);
    const tensors = new Map(model.tensors);
    tensors.set('token_embd.weight', { ...head, dtype: 'f16', source: bytesSource('head.f16', f16), offset: 0, byteLength: f16.byteLength });
    const { runner, requantized } = await loadCpuRunner({ ...model, tensors }, { kvBudgetBytes: 1 << 20, maxBatch: 8 });
    expect(requantized).toEqual(['token_embd.weight']);
    const ref = createReferenceModel(model.config, (n) => f32.get(n));
    runner.alloc(0);
    const errors = rowErrors(await rowsOf(runner, 0, PROMPT), ref.logitsAll(PROMPT, 0), model.config.vocab);
    expect(median(errors)).toBeLessThan(0.05);
  });
});
