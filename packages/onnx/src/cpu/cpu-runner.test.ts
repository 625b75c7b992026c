// The CpuRunner (intab's wasm SIMD128 kernels) on small q8_0 / q4_0 GGUFs of three families (llama; qwen3: q/k norms,
// rotate-half RoPE; gemma3: GeGLU, post-norms, a scaled embedding and a sliding window that the prompt outgrows):
// - its logits follow the CPU reference's on the dequantized weights (x is quantized to q8_0 before every matrix, as in
//   llama.cpp, so to a tolerance; cpu-kernels-llamacpp.test.ts holds it to llama.cpp itself);
// - a token's logits do not depend on how the step is put together (one prefill chunk or token by token, alone or
//   batched with other sequences, after a fork, a rewind, pages copied on write or written back by pageIO), bit for
//   bit: what lets the prefix cache give exactly the ids recomputing gives;
// - a step may stop after any layer (self-speculative drafts), and a model the kernels cannot run is refused with why.

import { describe, expect, test } from 'vitest';
import { dequantize, type WeightDtype } from '@intab/gpu';
import { bytesSource, openGguf, type ModelFiles, type StepEntry } from '@intab/model';
import { createReferenceModel } from '@intab/model/reference';
import { syntheticGguf, type SyntheticShape } from '@intab/testing/synthetic';
import { cpuRunnable, loadCpuRunner } from './load-cpu.ts';
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
  test('one prefill chunk, token by token, batched with others, forked, rewound, pages written back: the same bits', async () => {
    const model = await open(SHAPES.gemma3, 'q4_0', 4);
    const { runner } = await loadCpuRunner(model, { kvBudgetBytes: 1 << 20, maxBatch: 8, pageSize: 4 });
    const V = model.config.vocab;
    const all = [...PROMPT, 7, 300, 12];
    // The reference run: the whole text as one chunk.
    runner.alloc(0);
    const whole = await rowsOf(runner, 0, all);
    const row = (t: number) => whole.subarray(t * V, (t + 1) * V);
    // Token by token.
    runner.alloc(1);
    for (let t = 0; t < all.length; t++) {
      const [r] = await runner.step([{ seq: 1, tokens: [all[t]] }], { logits: true });
      expect(r.logits, `token ${t}`).toEqual(row(t));
    }
    // Batched: a prefill chunk of one sequence beside a decode of another and a verify entry of a third.
    runner.alloc(2);
    runner.alloc(3);
    await runner.step([{ seq: 2, tokens: all.slice(0, 10) }]);
    const entries: StepEntry[] = [
      { seq: 3, tokens: all.slice(0, 17) },
      { seq: 2, tokens: all.slice(10, 13), verify: [GREEDY, GREEDY, GREEDY] },
      { seq: 1, tokens: [5] },
    ];
    const [a, b] = await runner.step(entries, { logits: true });
    expect(a.logits).toEqual(row(16));
    expect(b.logits!.subarray(0, 3 * V)).toEqual(whole.subarray(10 * V, 13 * V));
    // Forked after 17 tokens (pages shared, the partial last page copied on write), then each appends.
    runner.fork(3, 4);
    const [c, d] = await runner.step([{ seq: 3, tokens: [all[17]] }, { seq: 4, tokens: [all[17]] }], { logits: true });
    expect(c.logits).toEqual(row(17));
    expect(d.logits).toEqual(row(17));
    // Rewound over a page boundary, then the same tokens again.
    runner.rewind(4, 6);
    expect(runner.kv.length(4)).toBe(12);
    const again = await rowsOf(runner, 4, all.slice(12, 20));
    expect(again).toEqual(whole.subarray(12 * V, 20 * V));
    // The K/V of seq 0's pages read, overwritten with zeros, then written back: its next token is as if recomputed.
    const pages = [...runner.kv.pagesOf(0)];
    const bytes = await runner.pageIO.read(pages);
    await runner.pageIO.write(pages, new Uint8Array(bytes.byteLength));
    await runner.pageIO.write(pages, bytes);
    const [e] = await runner.step([{ seq: 0, tokens: [9] }], { logits: true });
    runner.alloc(5);
    const fresh = await rowsOf(runner, 5, [...all, 9]);
    expect(e.logits).toEqual(fresh.subarray(all.length * V));
    expect(new Set(runner.kv.pagesOf(0)).size).toBe(runner.kv.pagesOf(0).length);
    runner.destroy();
  });
});

describe('what the CPU kernels run', () => {
  test('layer matrices in q4_0 / q8_0 run; f16 and f32 ones, and Qwen3.5, are refused with why', async () => {
    expect(cpuRunnable(await open(SHAPES.llama, 'q4_0'))).toBeUndefined();
    expect(cpuRunnable(await open(SHAPES.llama, 'f16'))).toMatch(/layer matrices are f16, and intab's CPU kernels read q4_0 and q8_0/);
    const f32 = await open(SHAPES.llama, 'f32');
    expect(cpuRunnable(f32)).toMatch(/f32/);
    await expect(loadCpuRunner(f32)).rejects.toThrow(/layer matrices are f32/);
  });
});
