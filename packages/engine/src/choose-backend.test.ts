// chooseBackend's 'auto' for each kind of machine, with a stand-in GPU and WebAssembly.Suspending set or removed: an
// ONNX folder goes to ORT's WebGPU execution provider only on a hardware adapter where WebAssembly JSPI exists (ORT's
// WebGPU build that intab ships is the JSPI one), else to ORT's wasm; a checkpoint goes to intab's kernels on hardware,
// to ORT's wasm on a software adapter or without WebGPU. A GPU that 'auto' does not keep is destroyed.
import { afterEach, describe, expect, test } from 'vitest';
import type { Gpu } from '@intab/gpu';
import { bytesSource, type ModelFiles } from '@intab/model';
import { chooseBackend } from './load.ts';

const own = Object.getOwnPropertyDescriptor(WebAssembly, 'Suspending');
function jspi(present: boolean): void {
  if (present) Object.defineProperty(WebAssembly, 'Suspending', { value: class Suspending {}, configurable: true, writable: true });
  else delete (WebAssembly as { Suspending?: unknown }).Suspending;
}
afterEach(() => {
  if (own) Object.defineProperty(WebAssembly, 'Suspending', own);
  else delete (WebAssembly as { Suspending?: unknown }).Suspending;
});

/** A stand-in for requestGpu's answer: only what chooseBackend reads (the adapter) and whether it was destroyed. */
function adapter(isFallbackAdapter: boolean): { request: () => Promise<Gpu>; destroyed: () => boolean } {
  let destroyed = false;
  const gpu = { adapterInfo: { vendor: isFallbackAdapter ? 'google' : 'nvidia', architecture: isFallbackAdapter ? 'swiftshader' : 'ampere', device: '', description: '', isFallbackAdapter }, destroy: () => void (destroyed = true) };
  return { request: async () => gpu as unknown as Gpu, destroyed: () => destroyed };
}
const noWebGpu = async (): Promise<Gpu> => {
  throw new Error('navigator.gpu is undefined');
};
const onnxFolder: ModelFiles = { config: {} as ModelFiles['config'], tensors: new Map(), onnx: { model: bytesSource('onnx/model.onnx', new Uint8Array(0)), externalData: new Map() } };
const checkpoint: ModelFiles = { config: {} as ModelFiles['config'], tensors: new Map() };

describe("chooseBackend('auto')", () => {
  test('an ONNX folder on a hardware adapter: the WebGPU EP with JSPI, ORT wasm without it (saying why)', async () => {
    jspi(true);
    let gpu = adapter(false);
    expect(await chooseBackend('auto', onnxFolder, gpu.request)).toMatchObject({ name: 'onnx-webgpu', reason: expect.stringContaining('hardware WebGPU adapter (nvidia ampere)') });
    expect(gpu.destroyed()).toBe(true);
    jspi(false);
    gpu = adapter(false);
    const choice = await chooseBackend('auto', onnxFolder, gpu.request);
    expect(choice.name).toBe('onnx-wasm');
    expect(choice.reason).toContain('WebAssembly JSPI');
    expect(gpu.destroyed()).toBe(true);
  });

  test('a checkpoint: intab kernels on hardware (JSPI or not), ORT wasm on a software adapter or without WebGPU', async () => {
    for (const present of [true, false]) {
      jspi(present);
      const hw = adapter(false);
      const choice = await chooseBackend('auto', checkpoint, hw.request);
      expect(choice.name).toBe('webgpu');
      expect(hw.destroyed()).toBe(false);
      const sw = adapter(true);
      expect(await chooseBackend('auto', onnxFolder, sw.request)).toMatchObject({ name: 'onnx-wasm', reason: expect.stringContaining('software') });
      expect(sw.destroyed()).toBe(true);
      expect(await chooseBackend('auto', checkpoint, noWebGpu)).toMatchObject({ name: 'onnx-wasm', reason: expect.stringContaining('WebGPU is unavailable') });
    }
  });

  test("asked by name, 'onnx-webgpu' is what is returned (without JSPI, @intab/onnx refuses it at load, before reading the model)", async () => {
    jspi(false);
    expect(await chooseBackend('onnx-webgpu', onnxFolder, noWebGpu)).toEqual({ name: 'onnx-webgpu', reason: "backend 'onnx-webgpu' was asked for" });
  });
});
