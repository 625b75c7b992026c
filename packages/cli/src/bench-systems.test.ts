// bench compare's --systems: full names, bare names standing for their backends (the issue's `--systems
// intab,llama.cpp`), and what cannot run a model refused with the reason.
import { describe, expect, test } from 'vitest';
import { SYSTEMS, systemsFromFlags } from './bench-systems.ts';

describe('bench compare --systems', () => {
  const gguf = { onnx: false, gguf: true };
  test('every system that applies by default; a bare name is its backends', () => {
    expect(systemsFromFlags({}, gguf)).toEqual(SYSTEMS);
    expect(systemsFromFlags({ systems: 'intab,llama.cpp' }, gguf)).toEqual(['intab/webgpu', 'intab/onnx-wasm', 'intab/onnx-webgpu', 'llama.cpp/native']);
    expect(systemsFromFlags({ systems: 'intab/webgpu, llama.cpp/native,intab' }, gguf)).toEqual(['intab/webgpu', 'llama.cpp/native', 'intab/onnx-wasm', 'intab/onnx-webgpu']);
    // The earlier name is still taken.
    expect(systemsFromFlags({ systems: 'llama.cpp/cpu' }, gguf)).toEqual(['llama.cpp/native']);
    // an ONNX folder: no WebGPU kernels, no GGUF peers
    expect(systemsFromFlags({ systems: 'intab' }, { onnx: true, gguf: false })).toEqual(['intab/onnx-wasm', 'intab/onnx-webgpu']);
  });

  test('unknown names and systems that cannot run the model are refused with the reason', () => {
    expect(() => systemsFromFlags({ systems: 'ollama' }, gguf)).toThrow(/'ollama' is not one of/);
    expect(() => systemsFromFlags({ systems: 'llama.cpp' }, { onnx: false, gguf: false })).toThrow(/llama.cpp runs GGUF files/);
    expect(() => systemsFromFlags({ systems: 'wllama/wasm' }, { onnx: false, gguf: false })).toThrow(/wllama runs GGUF files/);
    expect(() => systemsFromFlags({ systems: ' , ' }, gguf)).toThrow(/empty/);
  });
});
