// chooseBackend's 'auto' for each kind of machine, with a stand-in GPU and WebAssembly.Suspending set or removed: an
// ONNX folder goes to ORT's WebGPU execution provider only on a hardware adapter where WebAssembly JSPI exists (ORT's
// WebGPU build that intab ships is the JSPI one), else to ORT's wasm; a checkpoint goes to intab's kernels on hardware,
// to ORT's wasm on a software adapter or without WebGPU. A GPU that 'auto' does not keep is destroyed. With a host's
// onnxruntime (onnxruntime-node in Node), its providers stand in for onnxruntime-web's builds, and Dawn's llvmpipe
// adapter counts as the software one it is.
import { afterEach, describe, expect, test } from 'vitest';
import type { Gpu } from '@intab/gpu';
import { bytesSource, type ModelFiles } from '@intab/model';
import type { OrtRuntime } from '@intab/onnx';
import { chooseBackend, isSoftwareAdapter } from './load.ts';

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

describe("chooseBackend with the host's onnxruntime (the CLI's Node runtime: Dawn and onnxruntime-node)", () => {
  /** What a Node host hands in: only what chooseBackend reads (its name and providers) and what it passes on. */
  const ort = (webgpu: boolean): OrtRuntime => ({ name: 'onnxruntime-node 1.30.0', ort: {} as OrtRuntime['ort'], providers: { 'onnx-wasm': 'cpu', ...(webgpu ? { 'onnx-webgpu': 'webgpu' } : {}) }, threads: 2 });
  /** Dawn's OpenGL adapter over Mesa's llvmpipe: it does not call itself a fallback adapter, its device says what it is. */
  const llvmpipe = () => {
    let destroyed = false;
    const gpu = { adapterInfo: { vendor: '', architecture: '', device: 'llvmpipe-llvm-15-0-6-256-bits-', description: 'OpenGL version 4.5 (Core Profile) Mesa 22.3.6', isFallbackAdapter: false }, destroy: () => void (destroyed = true) };
    return { request: async () => gpu as unknown as Gpu, destroyed: () => destroyed };
  };

  test('a software adapter by its name (llvmpipe, lavapipe, SwiftShader) is one, whatever isFallbackAdapter says', () => {
    const info = (device: string, isFallbackAdapter = false) => ({ vendor: '', architecture: '', device, description: '', isFallbackAdapter });
    for (const d of ['llvmpipe (LLVM 15.0.6, 256 bits)', 'lavapipe', 'SwiftShader Device (Subzero)']) expect(isSoftwareAdapter(info(d)), d).toBe(true);
    expect(isSoftwareAdapter(info('NVIDIA GeForce RTX 4090'))).toBe(false);
    expect(isSoftwareAdapter(info('', true))).toBe(true);
  });

  test("auto on llvmpipe: the host's CPU provider runs it, carried in the choice, and the reason names both", async () => {
    const sw = llvmpipe();
    const runtime = ort(true);
    const choice = await chooseBackend('auto', checkpoint, sw.request, { ort: runtime });
    expect(choice).toEqual({ name: 'onnx-wasm', ort: runtime, reason: "auto: the only WebGPU adapter is a software one (llvmpipe-llvm-15-0-6-256-bits-), where onnxruntime-node 1.30.0's cpu execution provider decodes faster" });
    expect(sw.destroyed()).toBe(true);
    expect(await chooseBackend('auto', checkpoint, noWebGpu, { ort: runtime })).toMatchObject({ name: 'onnx-wasm', ort: runtime, reason: expect.stringMatching(/WebGPU is unavailable here \(navigator\.gpu is undefined\), so onnxruntime-node 1\.30\.0's cpu execution provider runs it$/) });
    expect(await chooseBackend('onnx-wasm', checkpoint, noWebGpu, { ort: runtime })).toEqual({ name: 'onnx-wasm', ort: runtime, reason: "backend 'onnx-wasm' was asked for (on onnxruntime-node 1.30.0)" });
  });

  test("an ONNX folder on hardware: the host's WebGPU provider where it has one (JSPI does not matter), its CPU one where not", async () => {
    jspi(false);
    const withGpu = ort(true);
    expect(await chooseBackend('auto', onnxFolder, adapter(false).request, { ort: withGpu })).toMatchObject({ name: 'onnx-webgpu', ort: withGpu, reason: expect.stringContaining("runs on onnxruntime-node 1.30.0's WebGPU execution provider") });
    const cpuOnly = ort(false);
    expect(await chooseBackend('auto', onnxFolder, adapter(false).request, { ort: cpuOnly })).toMatchObject({ name: 'onnx-wasm', ort: cpuOnly, reason: expect.stringContaining('onnxruntime-node 1.30.0 has no WebGPU execution provider here') });
    // A checkpoint on hardware is intab's kernels, whatever runtime is at hand.
    expect(await chooseBackend('auto', checkpoint, adapter(false).request, { ort: cpuOnly })).toMatchObject({ name: 'webgpu' });
  });
});
