// Which runner 'onnx-wasm' loads (loadOnnxModel, as the engine's Worker calls it): intab's CPU kernels for a q4_0 GGUF
// (info.adapter says so), onnxruntime's graph when `cpuKernels: 'onnxruntime'` asks or the weights are unquantized
// (run exactly there), the kernels on those too when `cpuKernels: 'intab'` asks (re-quantized to q8_0, said in
// info.warnings), and a typed error saying why when asked for a model the kernels cannot run.
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { bytesSource, openGguf } from '@intab/model';
import { syntheticGguf } from '@intab/testing/synthetic';
import { InvalidRequestError } from './errors.ts';
import { loadOnnxModel } from './load.ts';
import { stories260K } from './test-models.ts';

const SHAPE = { hidden: 64, ffn: 128, layers: 2, heads: 4, kvHeads: 2, headDim: 16, vocab: 256, ropeTheta: 10000, context: 128 };
const WASM = { name: 'onnx-wasm', reason: 'test' } as const;
const OPTIONS = { kvBudgetBytes: 1 << 20, maxBatch: 4 };
const open = async (dtype: 'q4_0' | 'f16') => ({ model: await openGguf(bytesSource(`m-${dtype}.gguf`, syntheticGguf(SHAPE, dtype, 1))) });

describe("what runs a model on 'onnx-wasm'", () => {
  test('a q4_0 GGUF: the CPU kernels; cpuKernels onnxruntime: the graph', async () => {
    const m = await open('q4_0');
    const cpu = await loadOnnxModel(m, WASM, OPTIONS);
    expect(cpu.info).toMatchObject({ adapter: "intab's wasm SIMD128 kernels (q4_0, 1 thread)", prefixCache: true });
    expect(cpu.info.warnings).toBeUndefined();
    cpu.runner.destroy();
    const ort = await loadOnnxModel(m, WASM, { ...OPTIONS, cpuKernels: 'onnxruntime' });
    expect(ort.info.adapter).toMatch(/^onnxruntime-web wasm \(1 thread\); graph written from the weights$/);
    ort.runner.destroy();
  });

  test('an f16 GGUF: the graph (exact); cpuKernels intab: the kernels on q8_0, with a warning', async () => {
    const m = await open('f16');
    const ort = await loadOnnxModel(m, WASM, OPTIONS);
    expect(ort.info.adapter).toMatch(/^onnxruntime-web wasm/);
    ort.runner.destroy();
    const cpu = await loadOnnxModel(m, WASM, { ...OPTIONS, cpuKernels: 'intab' });
    expect(cpu.info.adapter).toBe("intab's wasm SIMD128 kernels (q8_0 from f16, 1 thread)");
    expect(cpu.info.warnings).toEqual(["15 matrices (f16) were re-quantized to q8_0 on load: intab's CPU kernels read q4_0 and q8_0 as stored."]);
    cpu.runner.destroy();
  });

  test('cpuKernels intab on a model the kernels cannot run: InvalidRequestError saying why', async () => {
    // stories260K: hidden 64, feed-forward 172 (not whole 32-value blocks).
    const model = await openGguf(bytesSource('stories260K.gguf', new Uint8Array(readFileSync(stories260K().path))));
    const err = await loadOnnxModel({ model }, WASM, { ...OPTIONS, cpuKernels: 'intab' }).catch((e) => e);
    expect(err).toBeInstanceOf(InvalidRequestError);
    expect(err.message).toMatch(/'cpuKernels' should be 'onnxruntime' or absent for this model: intab's CPU kernels cannot run it \(its rows are not whole 32-value blocks\)/);
  });
});
