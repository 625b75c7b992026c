// bench compare's --systems: full names, bare names standing for their backends (the issue's `--systems
// intab,llama.cpp`), and what cannot run a model refused with the reason; the seeded prompt ids every system gets.
import { describe, expect, test } from 'vitest';
import { SYSTEMS, systemsFromFlags } from './bench-systems.ts';
import { loadTokenizer } from '@intab/model';
import { realTokenizerFiles } from '@intab/testing/tokenizer-corpus';
import { benchPromptIds } from '../page/bench-prompt.ts';

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

describe('the prompt ids every system of a run gets', () => {
  test("with a tokenizer, a text's encoding (so a peer that takes text only gets the same ids), seeded; without, random ids", () => {
    const tokenizer = loadTokenizer(realTokenizerFiles('qwen3'));
    const config = { vocab: 151936, bosId: null };
    for (const seed of [0, 1, 2, 3]) {
      const ids = benchPromptIds(config, tokenizer, 32, seed);
      expect(ids).toHaveLength(32);
      expect(ids.some((id) => tokenizer.isSpecial(id))).toBe(false);
      expect(tokenizer.encode(tokenizer.decode(ids), { addSpecialTokens: false })).toEqual(ids);
      expect(benchPromptIds(config, tokenizer, 32, seed)).toEqual(ids);
    }
    expect(benchPromptIds(config, tokenizer, 32, 0)).not.toEqual(benchPromptIds(config, tokenizer, 32, 1));
    // BOS first where the model has one; the rest still a text's encoding.
    const withBos = benchPromptIds({ vocab: 151936, bosId: 151643 }, tokenizer, 16, 5);
    expect(withBos[0]).toBe(151643);
    expect(tokenizer.encode(tokenizer.decode(withBos.slice(1)), { addSpecialTokens: false })).toEqual(withBos.slice(1));
    const bare = benchPromptIds({ vocab: 512, bosId: 1 }, undefined, 8, 0);
    expect(bare).toHaveLength(8);
    expect(bare[0]).toBe(1);
    expect(bare.slice(1).every((id) => id >= 3 && id < 512)).toBe(true);
  });
});
