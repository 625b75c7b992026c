// The runtime itself: limits, features, caches, readback, profiler, device loss.
import { describe, expect, test } from 'vitest';
import { requestGpu } from './device.ts';
import { Profiler } from './profiler.ts';
import { createRmsNorm } from './kernels/rmsnorm.ts';
import { WebGpuUnavailableError } from './errors.ts';

describe('device', () => {
  test('requests the adapter limits, not the defaults, and reports features', async () => {
    const adapter = (await navigator.gpu.requestAdapter())!;
    const gpu = await requestGpu();
    expect(gpu.limits.maxStorageBufferBindingSize).toBe(adapter.limits.maxStorageBufferBindingSize);
    expect(gpu.limits.maxBufferSize).toBe(adapter.limits.maxBufferSize);
    expect(gpu.limits.maxComputeInvocationsPerWorkgroup).toBe(adapter.limits.maxComputeInvocationsPerWorkgroup);
    expect(gpu.features.subgroups).toBe(adapter.features.has('subgroups' as GPUFeatureName));
    expect(gpu.features.shaderF16).toBe(adapter.features.has('shader-f16'));
    expect(gpu.features.timestampQuery).toBe(adapter.features.has('timestamp-query'));
    gpu.destroy();
    gpu.destroy(); // idempotent
    expect(gpu.destroyed).toBe(true);
  });

  test('liveBuffers counts buffers from createBuffer until their first destroy(); the device takes the rest', async () => {
    const gpu = await requestGpu();
    const before = gpu.liveBuffers;
    const a = gpu.device.createBuffer({ label: 'test.a', size: 16, usage: GPUBufferUsage.STORAGE });
    const b = gpu.device.createBuffer({ label: 'test.b', size: 16, usage: GPUBufferUsage.STORAGE });
    expect(gpu.liveBuffers).toBe(before + 2);
    a.destroy();
    a.destroy(); // a second destroy() frees nothing more
    expect(gpu.liveBuffers).toBe(before + 1);
    b.destroy();
    expect(gpu.liveBuffers).toBe(before);
    gpu.device.createBuffer({ label: 'test.c', size: 16, usage: GPUBufferUsage.STORAGE });
    gpu.destroy();
    expect(gpu.liveBuffers).toBe(0);
  });

  test('features can be disabled to exercise the plain f32 paths', async () => {
    const gpu = await requestGpu({ disable: { subgroups: true, shaderF16: true, timestampQuery: true } });
    expect(gpu.features).toEqual({ subgroups: false, shaderF16: false, timestampQuery: false });
    expect(gpu.device.features.has('subgroups' as GPUFeatureName)).toBe(false);
    gpu.destroy();
  });

  test('a missing navigator.gpu is a typed error that says what to do', async () => {
    const saved = Object.getOwnPropertyDescriptor(Navigator.prototype, 'gpu')!;
    Object.defineProperty(Navigator.prototype, 'gpu', { configurable: true, get: () => undefined });
    try {
      const err = await requestGpu().catch((e) => e);
      expect(err).toBeInstanceOf(WebGpuUnavailableError);
      expect(err.reason).toBe('no-navigator-gpu');
      expect(err.message).toMatch(/--enable-unsafe-webgpu/);
    } finally {
      Object.defineProperty(Navigator.prototype, 'gpu', saved);
    }
  });

  test('device loss reaches the owner as a DeviceLostError; destroy() does not', async () => {
    const lostEvents: unknown[] = [];
    const gpu = await requestGpu({ onLost: (e) => lostEvents.push(e) });
    gpu.device.destroy(); // simulates loss from outside the runtime
    const err = await gpu.lost;
    expect(err.name).toBe('DeviceLostError');
    expect(err.message).toMatch(/reload the model/);
    // A device destroyed directly reports reason 'destroyed', which is not surfaced as an unexpected loss.
    expect(lostEvents).toEqual([]);
  });

  test('pipelines are cached per kernel, variant and overrides', async () => {
    const gpu = await requestGpu();
    const before = gpu.pipelines.size;
    createRmsNorm(gpu);
    createRmsNorm(gpu);
    expect(gpu.pipelines.size).toBe(before + 1);
    createRmsNorm(gpu, { workgroupSize: 32 });
    createRmsNorm(gpu, { workgroupSize: 128 });
    expect(gpu.pipelines.size).toBe(before + 3);
    gpu.destroy();
  });

  test('readback copies inside the caller encoder and reuses staging buffers', async () => {
    const gpu = await requestGpu();
    const src = gpu.device.createBuffer({ size: 64, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
    gpu.device.queue.writeBuffer(src, 0, new Uint32Array([1, 2, 3, 4, 5, 6]));
    const enc = gpu.device.createCommandEncoder();
    const t1 = gpu.readback.encodeCopy(enc, src, 4, 8);
    gpu.submit([enc.finish()]);
    expect([...new Uint32Array(await t1.read())]).toEqual([2, 3]);
    // a ragged size is padded for the copy and trimmed for the caller
    expect([...new Uint8Array(await gpu.readback.read(src, 12, 6))]).toEqual([4, 0, 0, 0, 5, 0]);
    // Small reads (a step's 4 words per sequence) reuse one staging buffer instead of growing the pool.
    let created = 0;
    const create = gpu.device.createBuffer.bind(gpu.device);
    gpu.device.createBuffer = (d: GPUBufferDescriptor) => (created++, create(d));
    for (let i = 0; i < 20; i++) await gpu.readback.read(src, 0, 16 + 4 * (i % 3));
    gpu.device.createBuffer = create;
    expect(created).toBe(0);
    gpu.destroy();
  });

  test('the profiler: one timestamped entry per pass up to maxPasses, in order; forced wall clock: one for the submit', async () => {
    const gpu = await requestGpu();
    expect(gpu.features.timestampQuery, "the GPU tier's Chromium (SwiftShader) offers timestamp-query").toBe(true);
    const p = new Profiler(gpu, { maxPasses: 2 });
    expect(p.mode).toBe('timestamp');
    const enc = gpu.device.createCommandEncoder();
    const descriptors = ['a', 'b', 'c'].map((label) => p.pass(label));
    expect(descriptors.map((d) => [d.timestampWrites?.beginningOfPassWriteIndex, d.timestampWrites?.endOfPassWriteIndex])).toEqual([[0, 1], [2, 3], [undefined, undefined]]);
    for (const d of descriptors) enc.beginComputePass(d).end();
    const times = await p.submit(enc);
    expect(times.map((t) => t.label)).toEqual(['a', 'b']); // 'c' came past maxPasses: untimed
    for (const t of times) expect(Number.isFinite(t.ms) && t.ms >= 0, `${t.label}: ${t.ms}`).toBe(true);
    p.destroy();

    const wall = new Profiler(gpu, { forceWallClock: true });
    expect(wall.mode).toBe('wall-clock');
    const d = wall.pass('a');
    expect(d).toEqual({ label: 'a' }); // no timestamp writes
    const enc2 = gpu.device.createCommandEncoder();
    enc2.beginComputePass(d).end();
    const whole = await wall.submit(enc2, 'step');
    expect(whole.map((t) => t.label)).toEqual(['step']);
    expect(Number.isFinite(whole[0].ms) && whole[0].ms >= 0).toBe(true);
    wall.destroy();
    gpu.destroy();
  });
});

test('warm() compiles asynchronously and shares the cache with get()', async () => {
  const gpu = await requestGpu();
  const spec = {
    name: 'probe',
    variant: 'f32',
    code: '@group(0) @binding(0) var<storage, read_write> a: array<f32>;\n@compute @workgroup_size(1) fn main() { a[0] = 1.0; }',
    bindings: ['storage'] as const,
  };
  const warmed = await gpu.pipelines.warm(spec);
  expect(gpu.pipelines.get(spec)).toBe(warmed);
  gpu.destroy();
});
