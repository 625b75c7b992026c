// A load's GPU memory without a GPU: how a KV budget becomes pages (clamped to the adapter's buffer and binding limits,
// the clamp reported; refused when not one page fits or the budget is no number), what loadNeeds counts for
// stories260K's real GGUF (its f32 matrices as stored, plus createWeight's slack word each; the quantized sizes
// with quantize), and what a GpuOutOfMemoryError says.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { GpuOutOfMemoryError, LimitError, rowBytes } from '@intab/gpu';
import { IntabModelError } from './errors.ts';
import { loadNeeds } from './gpu-memory.ts';
import { planKvCache } from './kv-cache.ts';
import { openGguf } from './load.ts';
import { bytesSource } from './source.ts';

const SHARED = process.env.INTAB_SHARED ? `${process.env.INTAB_SHARED.replace(/\/$/, '')}/` : fileURLToPath(new URL('../../../../shared/', import.meta.url));
const MiB = 1 << 20;
// 2 layers, 4 kv heads of 8: one page (16 tokens) of one layer's K is 2 KiB; of all layers' K and V, 8 KiB.
const shape = { layers: 2, kvHeads: 4, headDim: 8 };

describe('planKvCache', () => {
  test('a budget within the limits buys whole pages, not clamped', () => {
    const plan = planKvCache({ maxStorageBufferBindingSize: 128 * MiB, maxBufferSize: 256 * MiB }, shape, 4 * MiB + 5000);
    expect(plan).toMatchObject({ pages: 512, pageSize: 16, pageBytes: 2048, stagingPages: 16 });
    expect(plan.budget).toEqual({ asked: 4 * MiB + 5000, granted: 4 * MiB });
    expect(plan.bytes).toBe(4 * MiB + 16 * 2048);
  });

  test('layers that keep no K/V (Qwen3.5\'s Gated DeltaNet layers) cost no page; windowed ones get their own store', () => {
    const limits = { maxStorageBufferBindingSize: 128 * MiB, maxBufferSize: 256 * MiB };
    const four = { layers: 4, kvHeads: 4, headDim: 8 };
    const hybrid = planKvCache(limits, { ...four, kvLayers: [3] }, 4 * MiB);
    expect([hybrid.pages, hybrid.keepsKv]).toEqual([1024, [false, false, false, true]]); // 4 MiB / (2048 · 2 · 1 layer)
    expect(planKvCache(limits, four, 4 * MiB).pages).toBe(256);
    // five windowed layers to one full (Gemma 3): window pages for 2 sequences, the rest to the full layer
    const gemma = planKvCache(limits, { layers: 6, kvHeads: 4, headDim: 8, windows: [4, 4, 4, 4, 4, 0], windowStore: { reach: 4, step: 8, sequences: 2 } }, 4 * MiB);
    expect(gemma.window).toEqual({ window: 4, reach: 4, step: 8, pages: 2 * (Math.ceil(16 / 16) + 1) });
    expect(gemma.pages).toBe(Math.floor((4 * MiB - 4 * 2048 * 2 * 5) / (2048 * 2)));
    expect(gemma.budget.granted).toBe(gemma.pages * 2048 * 2 + 4 * 2048 * 2 * 5);
  });

  test('a budget past the limits is clamped to what one buffer and one binding hold, and says which limit', () => {
    const byBinding = planKvCache({ maxStorageBufferBindingSize: 128 * MiB, maxBufferSize: 256 * MiB }, shape, 2 ** 40);
    expect(byBinding.pages).toBe((128 * MiB) / 2048);
    expect(byBinding.budget).toEqual({ asked: 2 ** 40, granted: 4 * 128 * MiB, limit: 'maxStorageBufferBindingSize' });
    const byBuffer = planKvCache({ maxStorageBufferBindingSize: 128 * MiB, maxBufferSize: 64 * MiB + 100 }, shape, Infinity);
    expect(byBuffer.pages).toBe((64 * MiB) / 2048);
    expect(byBuffer.budget).toEqual({ asked: Infinity, granted: 4 * 64 * MiB, limit: 'maxBufferSize' });
    // Exactly what the limit holds is not a clamp.
    expect(planKvCache({ maxStorageBufferBindingSize: 2048 * 10, maxBufferSize: 2048 * 10 }, shape, 8192 * 10).budget).toEqual({ asked: 81920, granted: 81920 });
  });

  test('the copy-on-write staging buffer stays within the limits too', () => {
    const plan = planKvCache({ maxStorageBufferBindingSize: 2048 * 5, maxBufferSize: 2048 * 5 }, shape, MiB);
    expect(plan).toMatchObject({ pages: 5, stagingPages: 5 });
  });

  test('not one page: a LimitError naming the budget or the limit; a budget that is no positive number: refused', () => {
    const limits = { maxStorageBufferBindingSize: 128 * MiB, maxBufferSize: 256 * MiB };
    expect(() => planKvCache(limits, shape, 8191)).toThrow(LimitError);
    expect(() => planKvCache(limits, shape, 8191)).toThrow(expect.objectContaining({ limit: 'KV budget', requested: 8192, allowed: 8191 }));
    const tiny = { maxStorageBufferBindingSize: 1024, maxBufferSize: 1024 };
    expect(() => planKvCache(tiny, shape, MiB)).toThrow(expect.objectContaining({ name: 'LimitError', limit: 'maxStorageBufferBindingSize', requested: 2048, allowed: 1024 }));
    for (const bad of [0, -1, Number.NaN, '64' as unknown as number]) expect(() => planKvCache(limits, shape, bad)).toThrow(IntabModelError);
  });
});

describe('loadNeeds', () => {
  test("stories260K: its f32 weights as stored plus one slack word per matrix; q8_0 rows when quantized; the KV plan's bytes", async () => {
    const model = await openGguf(bytesSource('stories260K.gguf', new Uint8Array(readFileSync(`${SHARED}models/stories260K/stories260K.gguf`))));
    const c = model.config;
    const limits = { limits: { maxStorageBufferBindingSize: 128 * MiB, maxBufferSize: 256 * MiB } } as Parameters<typeof loadNeeds>[0];
    const kv = { layers: c.layers, kvHeads: c.kvHeads, headDim: c.headDim, budgetBytes: 4 * MiB };
    const o = { kv, maxTokens: 512, maxBatch: 16, maxRows: 64 };
    const used = [...model.tensors.values()].filter((t) => t.name !== 'rope_freqs.weight' && !(c.tiedEmbeddings && t.name === 'output.weight'));
    expect(used.every((t) => t.dtype === 'f32')).toBe(true);
    const matrices = used.filter((t) => t.shape.length === 2);
    const needs = loadNeeds(limits, c, model.tensors, o);
    expect(needs.weights).toBe(used.reduce((s, t) => s + t.byteLength, 0) + 4 * matrices.length);
    expect(needs.kv).toBe(planKvCache(limits.limits, kv, kv.budgetBytes).bytes);
    // q8_0 stores 34 bytes per 32 values, for rows of a multiple of 32 (ffn_down's 172 stay f32); 1-D tensors stay f32.
    const q8 = loadNeeds(limits, c, model.tensors, { ...o, quantize: 'q8_0' });
    const vectors = used.filter((t) => t.shape.length !== 2).reduce((s, t) => s + t.byteLength, 0);
    const q8Row = (k: number) => (k % 32 === 0 ? rowBytes('q8_0', k) : 4 * k);
    expect(matrices.some((t) => t.shape[1] % 32 !== 0) && matrices.some((t) => t.shape[1] % 32 === 0)).toBe(true);
    expect(q8.weights).toBe(vectors + matrices.reduce((s, t) => s + t.shape[0] * q8Row(t.shape[1]) + 4, 0));
    expect(q8.activations).toBe(needs.activations);
    // More rows per step, more activations: the (R, V) logits and sampler scratch grow by 2 · V · 4 bytes a row.
    expect(loadNeeds(limits, c, model.tensors, { ...o, maxRows: 65 }).activations - needs.activations).toBeGreaterThanOrEqual(2 * c.vocab * 4);
  });
});

describe('GpuOutOfMemoryError', () => {
  test('gives the figures, leads with the advice for what failed, and keeps the GPU message', () => {
    const needs = { weights: 3 * 2 ** 30, kv: 128 * MiB, activations: 40 * MiB };
    const weights = new GpuOutOfMemoryError('weights', 512 * MiB, needs, 'Out of memory\n - While calling CreateBuffer');
    expect(weights).toMatchObject({ name: 'GpuOutOfMemoryError', code: 'gpu_out_of_memory', allocating: 'weights', requested: 512 * MiB, needs });
    expect(weights.message).toBe(
      'Out of GPU memory allocating the weights (512.0 MiB): the model needs 3.16 GiB on the GPU (weights 3.00 GiB, KV-cache 128.0 MiB, ' +
        "activations 40.0 MiB). Everything this load allocated was freed: load a smaller model or quantize its weights (quantize: 'q4_0'), " +
        'or lower kvBudgetBytes (the KV-cache takes 128.0 MiB), or close other tabs and apps that use the GPU, then load again. (GPU: Out of memory)',
    );
    const kv = new GpuOutOfMemoryError('kv-cache', 128 * MiB, needs, 'refused');
    expect(kv.message).toContain('allocating the KV-cache (128.0 MiB)');
    expect(kv.message).toContain('was freed: lower kvBudgetBytes (the KV-cache takes 128.0 MiB), or load a smaller model');
    // Plain data: it survives structured cloning field by field.
    expect(structuredClone({ ...kv })).toMatchObject({ allocating: 'kv-cache', requested: 128 * MiB, needs, detail: 'refused', code: 'gpu_out_of_memory' });
  });
});
