// Which onnxruntime-web build each backend fetches, in headless Chromium: nothing before a session is made; 'onnx-wasm'
// fetches only the wasm-only build's binary; 'onnx-webgpu' only the JSPI build's (16.8 MB), never the asyncify one
// (26.8 MB, past static hosts' 25 MiB per-file limit) nor JSEP's. Both run a one-node graph to the right values, the
// WebGPU one on ORT's WebGPU execution provider over this machine's adapter (Chromium 137+ has WebAssembly JSPI).
import { expect, test } from 'vitest';
import { encodeModel, f32Tensor, DataType } from './onnx-proto.ts';
import { createSession, hasJspi } from './session.ts';

// Vite's dev server loads hundreds of modules; room for all of them, so the wasm fetches are never dropped.
performance.setResourceTimingBufferSize(100_000);
/** ORT's wasm binaries this page fetched so far, by file name. */
const ortWasm = () => [...new Set(performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname.split('/').pop()!).filter((f) => /^ort-wasm.*\.wasm$/.test(f)))].sort();

/** y = relu(x + w), x and w of (2) f32. */
const relu = encodeModel({
  irVersion: 10,
  opsetImports: [{ domain: '', version: 21 }],
  graph: {
    name: 'g',
    nodes: [
      { opType: 'Add', name: 'add', inputs: ['x', 'w'], outputs: ['s'] },
      { opType: 'Relu', name: 'relu', inputs: ['s'], outputs: ['y'] },
    ],
    initializers: [f32Tensor('w', [2], Float32Array.from([1, -3]))],
    inputs: [{ name: 'x', elemType: DataType.FLOAT, dims: [2] }],
    outputs: [{ name: 'y', elemType: DataType.FLOAT, dims: [2] }],
  },
});

test('each ONNX backend fetches its own ORT build, and only when its first session is made', async () => {
  expect(ortWasm()).toEqual([]);
  expect(hasJspi()).toBe(true);
  for (const [backend, fetched] of [
    ['onnx-wasm', ['ort-wasm-simd-threaded.wasm']],
    ['onnx-webgpu', ['ort-wasm-simd-threaded.jspi.wasm', 'ort-wasm-simd-threaded.wasm']],
  ] as const) {
    const { ort, session } = await createSession(relu, { backend });
    const out = await session.run({ x: new ort.Tensor('float32', Float32Array.from([2, 1]), [2]) });
    expect(Array.from(out.y.data as Float32Array), backend).toEqual([3, 0]);
    await session.release();
    expect(ortWasm(), backend).toEqual(fetched);
  }
});
