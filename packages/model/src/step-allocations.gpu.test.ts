// After warm-up, a decode step creates no GPU object: every dispatch's params go into one table uploaded once per
// submit (gpu.uniforms), its bind group is built once and reused, and the activations and inputs reuse their
// buffers. Counted on the device over 50 decode steps of stories260K (headless Chromium, WebGPU).
import { expect, test } from 'vitest';
import { requestGpu } from '@intab/gpu';
import { fetchShared } from '@intab/testing/gpu';
import { Runner } from './runner.ts';
import { openGguf } from './load.ts';
import { bytesSource } from './source.ts';

test('50 decode steps after warm-up create no buffer, bind group, pipeline or shader module, and upload params once per submit', async () => {
  const gpu = await requestGpu();
  const model = await openGguf(bytesSource('stories260K.gguf', await fetchShared('models/stories260K/stories260K.gguf')));
  const runner = await Runner.load(gpu, model.config, model.tensors, { kvBudgetBytes: 4 << 20 });
  try {
    await runner.warmup();
    runner.alloc(0);
    let next = (await runner.step([{ seq: 0, tokens: [1, 403, 261, 310] }]))[0].id;
    next = (await runner.step([{ seq: 0, tokens: [next] }]))[0].id; // the first decode step sizes what decode uses
    const device = gpu.device;
    const counts: Record<string, number> = {};
    const originals = new Map<string, unknown>();
    for (const name of ['createBuffer', 'createBindGroup', 'createComputePipeline', 'createComputePipelineAsync', 'createShaderModule', 'createBindGroupLayout'] as const) {
      const original = device[name].bind(device) as (...a: unknown[]) => unknown;
      originals.set(name, device[name]);
      counts[name] = 0;
      (device as unknown as Record<string, unknown>)[name] = (...a: unknown[]) => (counts[name]++, original(...a));
    }
    let writes = 0;
    const writeBuffer = device.queue.writeBuffer.bind(device.queue);
    device.queue.writeBuffer = ((...a: Parameters<GPUQueue['writeBuffer']>) => (a[0] === gpu.uniforms.buffer && writes++, writeBuffer(...a))) as GPUQueue['writeBuffer'];
    try {
      for (let i = 0; i < 50; i++) next = (await runner.step([{ seq: 0, tokens: [next] }]))[0].id;
    } finally {
      for (const [name, f] of originals) (device as unknown as Record<string, unknown>)[name] = f;
      device.queue.writeBuffer = writeBuffer;
    }
    expect(counts).toEqual({ createBuffer: 0, createBindGroup: 0, createComputePipeline: 0, createComputePipelineAsync: 0, createShaderModule: 0, createBindGroupLayout: 0 });
    expect(writes).toBe(50); // one params upload per step (one submit each)
  } finally {
    runner.destroy();
    gpu.destroy();
  }
});
