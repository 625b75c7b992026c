// A GpuOutOfMemoryError thrown while the worker loads a model reaches the main thread as itself: the same class, code
// and figures (what was being allocated, the bytes asked, the model's needs), through serializeError's plain data.
import { describe, expect, test } from 'vitest';
import { GpuOutOfMemoryError, IntabGpuError } from '@intab/gpu';
import { deserializeError, serializeError } from './errors.ts';

describe('GpuOutOfMemoryError across the worker', () => {
  test('comes back with its class and fields', () => {
    const needs = { weights: 1_000_000, kv: 10 * 2 ** 30, activations: 300_000 };
    const sent = new GpuOutOfMemoryError('kv-cache', 10 * 2 ** 30, needs, 'vkAllocateMemory failed');
    const back = deserializeError(structuredClone(serializeError(sent)));
    expect(back).toBeInstanceOf(GpuOutOfMemoryError);
    expect(back).toBeInstanceOf(IntabGpuError);
    expect(back).toMatchObject({ name: 'GpuOutOfMemoryError', code: 'gpu_out_of_memory', allocating: 'kv-cache', requested: 10 * 2 ** 30, needs, detail: 'vkAllocateMemory failed' });
    expect((back as Error).message).toBe(sent.message);
  });
});
